package tenantsql

import (
	"context"
	"fmt"
	"strings"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/tenancy"
)

func params(ctx context.Context, d *postgres.DynamicRead, c *neo4j.RawCypher, status string) {
	d.Query(ctx, "SELECT * FROM orders WHERE status = $1", []any{status}, nil)
	c.Read(ctx, "MATCH (n {status: $status}) RETURN n", map[string]any{"status": status})
	table := "orders"
	d.Query(ctx, fmt.Sprintf("SELECT count(*) FROM %s", table), nil, nil)
	var b strings.Builder
	b.WriteString("SELECT 1")
	d.Query(ctx, b.String(), nil, nil)
}

// A tenant id as a parameter value, not text, is fine (if redundant).
func asParam(ctx context.Context, c *neo4j.RawCypher, id tenancy.ID) {
	c.Read(ctx, "MATCH (n {owner: $owner}) RETURN n", map[string]any{"owner": id.String()})
}
