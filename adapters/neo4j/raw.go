package neo4j

import (
	"context"
)

// RawCypher is the raw Cypher hatch: statements the caller writes, which
// nothing can rewrite or verify. Its origin is raw, so it only ever runs
// on a tenant's own driver (dedicated). Values still travel as parameters.
type RawCypher struct{ r *route }

// Name is the route's name.
func (c *RawCypher) Name() string { return c.r.spec.name }

// Write runs cypher in a write transaction on the tenant's driver and
// returns every record as a map of its keys.
func (c *RawCypher) Write(ctx context.Context, cypher string, params map[string]any) ([]map[string]any, error) {
	return c.run(ctx, true, cypher, params)
}

// Read runs cypher in a read transaction.
func (c *RawCypher) Read(ctx context.Context, cypher string, params map[string]any) ([]map[string]any, error) {
	return c.run(ctx, false, cypher, params)
}

func (c *RawCypher) run(ctx context.Context, write bool, cypher string, params map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	err := c.r.transact(ctx, write, func(ctx context.Context, tx *txn) error {
		recs, err := tx.exec(ctx, write, stmt{cypher, params})
		if err != nil {
			return err
		}
		out = make([]map[string]any, len(recs))
		for i, rec := range recs {
			out[i] = rec.AsMap()
		}
		return nil
	})
	return out, err
}
