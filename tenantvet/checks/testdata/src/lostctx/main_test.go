package lostctx

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
)

func TestNotJudged(t *testing.T) {
	var c postgres.Counter
	c.Get(context.Background(), "hits")
}
