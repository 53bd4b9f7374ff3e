package neo4j

import (
	"context"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Verify counts, database by database of walk (the families Teardown
// removes), the tenant's nodes and relationships left: every node but the
// framework's own in a per-tenant or routed database, the nodes and
// relationships carrying the tenant property in a tagged route's shared
// one. A database that does not exist holds nothing. A per-tenant
// database that Community Edition could not drop counts by its nodes.
func (o *lifecycleTarget) Verify(ctx context.Context, tenant tenancy.ID) (migrate.Erasure, error) {
	var e migrate.Erasure
	err := o.walk(ctx, tenant, "verifying", func(ctx context.Context, r *route, sc scope, fam neoFamily) error {
		cypher := "MATCH (n) WHERE " + notFramework + " RETURN count(n)"
		kind := migrate.KindDatabase
		if fam == famTagged {
			kind = migrate.KindNodes
			cypher = "CALL { MATCH (n) WHERE n." + TenantProperty + " = $tenant AND " + notFramework + " RETURN count(n) AS c " +
				"UNION ALL MATCH ()-[x]->() WHERE x." + TenantProperty + " = $tenant RETURN count(x) AS c } RETURN sum(c)"
		}
		n, err := countIn(ctx, sc, cypher, map[string]any{"tenant": tenant.String()})
		if err != nil {
			return err
		}
		e.Check(migrate.Family{Name: string(fam), Kind: kind, Where: sc.target + "/" + sc.database, Route: r.spec.name}, n, sc.database)
		return nil
	})
	return e, err
}

// countIn runs a read returning one count; a database that does not exist
// counts nothing.
func countIn(ctx context.Context, sc scope, cypher string, p map[string]any) (int64, error) {
	sess := sc.drv.NewSession(ctx, sc.database)
	defer sess.Close(ctx)
	n, err := sess.ExecuteRead(ctx, func(tx runner) (any, error) {
		recs, err := tx.Run(ctx, cypher, p)
		if err != nil || len(recs) == 0 {
			return int64(0), err
		}
		c, _ := recs[0].Values[0].(int64)
		return c, nil
	})
	if notFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return n.(int64), nil
}
