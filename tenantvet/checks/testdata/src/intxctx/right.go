package intxctx

import (
	"context"

	"github.com/tenantwire/tenantwire/adapters/postgres"
)

func rightTransfer(ctx context.Context, c *postgres.Client, n *postgres.Counter) error {
	return c.InTx(ctx, func(ctx context.Context) error {
		if _, err := n.Add(ctx, "from", -1); err != nil {
			return err
		}
		inner, cancel := context.WithCancel(ctx)
		defer cancel()
		_, err := n.Add(inner, "to", 1)
		return err
	})
}

func apart(ctx context.Context, c *postgres.Client, n *postgres.Counter) error {
	return c.InTx(ctx, func(tx context.Context) error {
		//tenantvet:ignore intxctx the audit count must survive a rolled-back transfer
		_, err := n.Add(ctx, "attempts", 1)
		return err
	})
}
