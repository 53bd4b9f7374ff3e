// Package neo4j is a stub of tenantwire's Neo4j adapter.
package neo4j

import "context"

type RawCypher struct{}

func (c *RawCypher) Write(ctx context.Context, cypher string, params map[string]any) ([]map[string]any, error) {
	return nil, nil
}
func (c *RawCypher) Read(ctx context.Context, cypher string, params map[string]any) ([]map[string]any, error) {
	return nil, nil
}

// driver is adapter plumbing, not a route: its Close takes a context but
// binds no tenant (a false positive once).
type driver interface {
	Close(ctx context.Context) error
}

func closeAll(d driver) error { return d.Close(context.Background()) }
