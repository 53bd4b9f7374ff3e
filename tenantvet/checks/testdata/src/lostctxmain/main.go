package main

import (
	"context"

	"github.com/tenantwire/tenantwire/adapters/postgres"
)

func main() {
	var c postgres.Counter
	c.Get(context.Background(), "hits")
}
