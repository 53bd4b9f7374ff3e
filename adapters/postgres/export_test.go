package postgres

import (
	"context"
	"strings"
	"time"
)

// CachedStatementSets is how many per-(tenant, route) statement sets c
// holds, for the scale tests.
func CachedStatementSets(c *Client) int { return c.stmts.len() }

// SweepOutbox runs one sweep pass of o under ctx.
func SweepOutbox(ctx context.Context, o *Outbox, retain time.Duration) (int64, error) {
	return o.sweep(ctx, retain)
}

// ForgetTenantPredicate rewrites d's statements as if their tenant
// predicate had been lost: the tenant stays their first parameter and is
// compared to nothing, so only the server's row security can keep the
// call to the tenant's rows.
func ForgetTenantPredicate[T any](d *Documents[T]) {
	st := d.static
	for _, p := range []*string{&st.get, &st.exists, &st.update, &st.delete, &st.list, &st.count} {
		*p = strings.ReplaceAll(*p, "tenant_id = $1 AND ", "$1::uuid IS NOT NULL AND ")
	}
}
