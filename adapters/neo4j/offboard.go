package neo4j

import (
	"context"
	"errors"
	"fmt"
	"strings"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// deleteBatch bounds one delete transaction, so a large tenant does not
// build one transaction the size of its graph.
const deleteBatch = 1000

// notFramework keeps the framework's own nodes (migration history) out of
// every delete: their labels start with the reserved prefix.
var notFramework = "NOT any(l IN labels(n) WHERE toLower(l) STARTS WITH '" + floors.ReservedPrefix + "')"

// Teardown removes tenant's graph, route by route (each database once),
// in every family walk declares (neoFamily).
//
// The framework's own nodes (labels starting with "tenantwire") are never
// deleted. Deletes run in batches; a rerun completes an interrupted one.
func (o *lifecycleTarget) Teardown(ctx context.Context, tenant tenancy.ID) error {
	return o.walk(ctx, tenant, "offboarding", func(ctx context.Context, _ *route, sc scope, fam neoFamily) error {
		switch fam {
		case famDatabase:
			dropped, err := dropDatabase(ctx, sc)
			if err != nil || dropped {
				return err
			}
			return deleteAll(ctx, sc, "MATCH (n) WHERE "+notFramework, nil)
		case famRouted:
			return deleteAll(ctx, sc, "MATCH (n) WHERE "+notFramework, nil)
		default:
			p := map[string]any{"tenant": tenant.String()}
			// Relationships first: one carrying the tenant may join nodes
			// that do not (a tagged route writes both, but a rerun after a
			// partial delete may find either alone).
			if err := batched(ctx, sc, "MATCH ()-[x]->() WHERE x."+TenantProperty+" = $tenant WITH x LIMIT $batch DELETE x RETURN count(*)", p); err != nil {
				return err
			}
			return deleteAll(ctx, sc, "MATCH (n) WHERE n."+TenantProperty+" = $tenant AND "+notFramework, p)
		}
	})
}

// neoFamily is one family of a tenant's graph, by where it lives:
//   - famDatabase: a per-tenant database, dropped (DROP DATABASE ... IF
//     EXISTS WAIT, Enterprise Edition) or, where the server cannot drop
//     databases (Community Edition), emptied;
//   - famRouted: a routed route's database, the tenant's own, emptied;
//   - famTagged: the nodes and relationships of a tagged route's shared
//     database carrying the tenant property.
type neoFamily string

const (
	famDatabase neoFamily = "database"
	famRouted   neoFamily = "routed database"
	famTagged   neoFamily = "tagged nodes"
)

// walk visits, route by route, each database of the tenant's graph once
// with its family: what Teardown removes and Verify counts, one list. A
// routed tenant's database that does not exist holds nothing.
func (o *lifecycleTarget) walk(ctx context.Context, tenant tenancy.ID, doing string, visit func(context.Context, *route, scope, neoFamily) error) error {
	done := map[string]bool{}
	for _, spec := range o.routes {
		r := newRoute(o.core, spec)
		if !r.scoped {
			continue // a shared route holds nothing of a tenant's
		}
		var fam neoFamily
		switch {
		case r.perTenantDB:
			fam = famDatabase
		case r.core.routed():
			fam = famRouted
		case r.tagged:
			fam = famTagged
		default:
			continue
		}
		err := func() error {
			sc, err := r.openFor(ctx, tenant)
			if errors.Is(err, tenancy.CodeTenantNotProvisioned) {
				return nil
			}
			if err != nil {
				return err
			}
			defer sc.release()
			if key := string(fam) + "|" + sc.target + "|" + sc.database; done[key] {
				return nil
			} else {
				done[key] = true
			}
			return visit(ctx, r, sc, fam)
		}()
		if err != nil {
			return fmt.Errorf("neo4j: %s route %s: %w", doing, spec.name, err)
		}
	}
	return nil
}

// TeardownMany removes many tenants' graphs. On a module whose scoped
// routes are all tagged in the shared database, one batched delete walks
// the database for them all (WHERE tenant_id IN $tenants), where Teardown
// walks it twice a tenant (no index can serve a match on any label); other
// modules tear down each tenant in turn. The runner has checked the
// teardown opt-in. The error of a failed delete is every tenant's of the
// batch; a rerun completes it.
func (o *lifecycleTarget) TeardownMany(ctx context.Context, tenants []tenancy.ID) []error {
	errs := make([]error, len(tenants))
	var routes []*route
	for _, spec := range o.routes {
		if r := newRoute(o.core, spec); r.scoped {
			routes = append(routes, r)
		}
	}
	shared := !o.core.routed() && len(tenants) > 1
	for _, r := range routes {
		shared = shared && r.tagged && !r.perTenantDB
	}
	if !shared || len(routes) == 0 {
		for i, id := range tenants {
			errs[i] = o.Teardown(ctx, id)
		}
		return errs
	}
	ids := make([]string, len(tenants))
	for i, id := range tenants {
		ids[i] = id.String()
	}
	// Every tagged route of a plain driver uses the module's database.
	sc := scope{drv: o.core.plain, database: o.core.database}
	p := map[string]any{"tenants": ids}
	err := batched(ctx, sc, "MATCH ()-[x]->() WHERE x."+TenantProperty+" IN $tenants WITH x LIMIT $batch DELETE x RETURN count(*)", p)
	if err == nil {
		err = deleteAll(ctx, sc, "MATCH (n) WHERE n."+TenantProperty+" IN $tenants AND "+notFramework, p)
	}
	if err != nil {
		err = fmt.Errorf("neo4j: offboarding %d tenants: %w", len(ids), err)
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// dropDatabase drops the scope's database on the system database of its
// driver; dropped is false when the server cannot drop databases.
func dropDatabase(ctx context.Context, sc scope) (dropped bool, err error) {
	q, err := quote("database", sc.database)
	if err != nil {
		return false, err
	}
	sess := sc.drv.NewSession(ctx, "system")
	defer sess.Close(ctx)
	if _, err := sess.Run(ctx, "DROP DATABASE "+q+" IF EXISTS WAIT", map[string]any{}); err != nil {
		if enterpriseOnly(err) {
			return false, nil
		}
		return false, fmt.Errorf("dropping database %s: %w", sc.database, err)
	}
	return true, nil
}

// deleteAll detaches and deletes the nodes match selects (as n), a batch
// per transaction. A database that does not exist holds nothing.
func deleteAll(ctx context.Context, sc scope, match string, p map[string]any) error {
	err := batched(ctx, sc, match+" WITH n LIMIT $batch DETACH DELETE n RETURN count(*)", p)
	if notFound(err) {
		return nil
	}
	return err
}

// batched runs a delete returning count(*) until it deletes nothing.
func batched(ctx context.Context, sc scope, cypher string, p map[string]any) error {
	params := map[string]any{"batch": deleteBatch}
	for k, v := range p {
		params[k] = v
	}
	sess := sc.drv.NewSession(ctx, sc.database)
	defer sess.Close(ctx)
	for {
		n, err := sess.ExecuteWrite(ctx, func(tx runner) (any, error) {
			recs, err := tx.Run(ctx, cypher, params)
			if err != nil || len(recs) == 0 {
				return int64(0), err
			}
			c, _ := recs[0].Values[0].(int64)
			return c, nil
		})
		if err != nil {
			return err
		}
		if n.(int64) == 0 {
			return nil
		}
	}
}

// notFound recognises the server's answer for a database that does not
// exist (already dropped, or never provisioned).
func notFound(err error) bool {
	var ne *drv.Neo4jError
	return errors.As(err, &ne) && strings.Contains(ne.Code, "DatabaseNotFound")
}
