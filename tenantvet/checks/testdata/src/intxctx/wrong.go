package intxctx

import (
	"context"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/capability"
)

func transfer(ctx context.Context, c *postgres.Client, n *postgres.Counter, cc capability.Counter) error {
	return c.InTx(ctx, func(tx context.Context) error {
		if _, err := n.Add(ctx, "from", -1); err != nil { // want `intxctx: postgres.Counter.Add inside the InTx callback is called with the outer context ctx, not the callback's tx: it runs apart from the unit of work \(it neither sees its writes nor rolls back with it\); pass tx`
			return err
		}
		add := cc.Add
		_, err := add(ctx, "to", 1) // want `intxctx: capability.Counter.Add inside the InTx callback is called with the outer context ctx, not the callback's tx`
		return err
	})
}
