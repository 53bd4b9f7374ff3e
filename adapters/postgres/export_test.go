package postgres

import (
	"context"
	"time"
)

// CachedStatementSets is how many per-(tenant, route) statement sets c
// holds, for the scale tests.
func CachedStatementSets(c *Client) int { return c.stmts.len() }

// SweepOutbox runs one sweep pass of o under ctx.
func SweepOutbox(ctx context.Context, o *Outbox, retain time.Duration) (int64, error) {
	return o.sweep(ctx, retain)
}
