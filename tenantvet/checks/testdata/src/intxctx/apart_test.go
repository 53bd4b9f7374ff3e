package intxctx

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
)

func TestApart(t *testing.T) {
	ctx := context.Background()
	var c postgres.Client
	var n postgres.Counter
	c.InTx(ctx, func(tx context.Context) error { _, err := n.Add(ctx, "x", 1); return err })
}
