package tenantsql

import (
	"context"
	"fmt"
	"strings"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/tenancy"
)

func sprintf(ctx context.Context, d *postgres.DynamicRead, id tenancy.ID) {
	q := fmt.Sprintf("SELECT * FROM orders WHERE tenant = '%s'", id)
	d.Query(ctx, q, nil, nil) // want `tenantsql: the statement text passed to postgres.DynamicRead.Query is built from a tenancy.ID \(fmt.Sprintf with a tenancy.ID value\): the route scopes the statement to the tenant bound in ctx, and a tenant id in the text is a second predicate nothing checks, which can name another tenant; drop it from the text and pass values as parameters`
}

func plus(ctx context.Context, c *neo4j.RawCypher) {
	id, _ := tenancy.FromContext(ctx)
	c.Read(ctx, "MATCH (n {tenant: '"+id.String()+"'}) RETURN n", nil) // want `tenantsql: the statement text passed to neo4j.RawCypher.Read is built from a tenancy.ID \(\+ with tenancy.ID.String\(\)\)`
}

func plusAssign(ctx context.Context, c *neo4j.RawCypher, id tenancy.ID) {
	q := "MATCH (n) WHERE n.tenant = "
	q += id.Hex()
	c.Write(ctx, q, nil) // want `tenantsql: the statement text passed to neo4j.RawCypher.Write is built from a tenancy.ID \(tenancy.ID.Hex\(\)\)`
}

func builder(ctx context.Context, d *postgres.DynamicRead, id tenancy.ID) {
	var b strings.Builder
	b.WriteString("SELECT * FROM t WHERE tenant = ")
	fmt.Fprintf(&b, "'%s'", id)
	d.Query(ctx, b.String(), nil, nil) // want `tenantsql: the statement text passed to postgres.DynamicRead.Query is built from a tenancy.ID \(a strings.Builder fed a tenancy.ID value\)`
}

// A method value counts.
func methodValue(ctx context.Context, d *postgres.DynamicRead, id tenancy.ID) {
	query := d.Query
	query(ctx, "SELECT "+id.String(), nil, nil) // want `tenantsql: the statement text passed to postgres.DynamicRead.Query is built from a tenancy.ID`
}
