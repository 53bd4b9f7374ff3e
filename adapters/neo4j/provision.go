package neo4j

import (
	"context"
	"errors"
	"fmt"
	"strings"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ErrEnterpriseRequired: the server refused to create a database. Creating
// databases (the namespace tier's per-tenant database) needs Neo4j
// Enterprise Edition; Community Edition serves one user database.
var ErrEnterpriseRequired = errors.New("neo4j: CREATE DATABASE needs Neo4j Enterprise Edition (Community Edition has one user database)")

// enterpriseFix is what to do when the server cannot create databases.
const enterpriseFix = "run the module on Neo4j Enterprise Edition, which creates a database per tenant; on Community Edition " +
	"give the route TenantAware (tagged) instead of a per-tenant Database, or route each tenant to a server of its own (neo4j.Routed)"

// tenantDB is one database provisioning creates for a tenant, on the
// driver that serves it.
type tenantDB struct {
	route string
	sc    scope
}

// Provision creates tenant's databases: every per-tenant database the
// module's routes name for it, each once, with CREATE DATABASE ... IF NOT
// EXISTS WAIT on the system database of the tenant's driver (its own when
// routed); a database that exists is left alone. On a routed module it
// also opens the tenant's driver, whose check refuses a tenant whose
// credentials name a database the server lacks (tenant_not_provisioned):
// that database is the deployment's to create. The runner then migrates.
// The zero tenant (ProvisionShared) has nothing of its own.
func (m *lifecycleTarget) Provision(ctx context.Context, tenant tenancy.ID) error {
	if tenant.IsZero() {
		return nil
	}
	dbs, err := m.missing(ctx, tenant)
	if err != nil {
		return err
	}
	defer releaseAll(dbs)
	for _, d := range dbs {
		if err := createIn(ctx, d, m.core.module, tenant); err != nil {
			return err
		}
	}
	return nil
}

// PlanProvision lists the databases Provision would create for tenant
// (those missing), creating nothing: ProvisionAll's dry run.
func (m *lifecycleTarget) PlanProvision(ctx context.Context, tenant tenancy.ID) ([]string, error) {
	dbs, err := m.missing(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defer releaseAll(dbs)
	out := make([]string, 0, len(dbs))
	for _, d := range dbs {
		out = append(out, d.sc.database)
	}
	return out, nil
}

// missing is tenant's per-tenant databases that do not exist yet, each
// once (by the scope's target: the same name on two servers is two
// databases), holding their drivers until released.
func (m *lifecycleTarget) missing(ctx context.Context, tenant tenancy.ID) ([]tenantDB, error) {
	dbs, err := m.scopes(ctx, tenant, func(r *route, sc scope) (string, bool) { return sc.target, r.perTenantDB })
	if err != nil {
		return nil, err
	}
	out := make([]tenantDB, 0, len(dbs))
	for i, d := range dbs {
		exists, err := databaseExists(ctx, d.sc)
		if err != nil {
			releaseAll(out)
			releaseAll(dbs[i:])
			return nil, fmt.Errorf("neo4j: module %s: route %s: looking up database %s for tenant %s: %w", m.core.module, d.route, d.sc.database, tenant, err)
		}
		if exists {
			d.sc.release()
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// scopes opens tenant's scope on each route that has one of its own (a
// per-tenant database, or any route of a routed module), keeping one scope
// per key (none where key says not to keep it) and releasing the rest; on
// an error it releases what it opened.
func (m *lifecycleTarget) scopes(ctx context.Context, tenant tenancy.ID, key func(*route, scope) (string, bool)) ([]tenantDB, error) {
	var out []tenantDB
	seen := map[string]bool{}
	for _, s := range m.routes {
		r := newRoute(m.core, s)
		if !r.perTenantDB && !m.core.routed() {
			continue
		}
		sc, err := r.openFor(ctx, tenant)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		k, keep := key(r, sc)
		if !keep || seen[k] {
			sc.release()
			continue
		}
		seen[k] = true
		out = append(out, tenantDB{route: s.name, sc: sc})
	}
	return out, nil
}

func releaseAll(dbs []tenantDB) {
	for _, d := range dbs {
		d.sc.release()
	}
}

// databaseExists asks the system database of the scope's driver whether
// the scope's database (or an alias of that name) exists.
func databaseExists(ctx context.Context, sc scope) (bool, error) {
	sess := sc.drv.NewSession(ctx, "system")
	defer sess.Close(ctx)
	recs, err := sess.Run(ctx, "SHOW DATABASES YIELD name, aliases WHERE name = $name OR $name IN aliases RETURN name LIMIT 1",
		map[string]any{"name": sc.database})
	return len(recs) > 0, err
}

// createIn creates one database, auto-commit on the system database of
// its driver (administration commands take no transaction of their own).
func createIn(ctx context.Context, d tenantDB, module string, tenant tenancy.ID) error {
	s, err := createDatabase(d.sc.database)
	if err != nil {
		return err
	}
	sess := d.sc.drv.NewSession(ctx, "system")
	defer sess.Close(ctx)
	if _, err := sess.Run(ctx, s.cypher, s.params); err != nil {
		at := fmt.Sprintf("neo4j: module %s: route %s: creating database %s for tenant %s", module, d.route, d.sc.database, tenant)
		if enterpriseOnly(err) {
			return fmt.Errorf("%s: %w: %w (fix: %s)", at, ErrEnterpriseRequired, err, enterpriseFix)
		}
		return fmt.Errorf("%s: %w", at, err)
	}
	return nil
}

// enterpriseOnly recognises Community Edition's refusal of CREATE DATABASE.
func enterpriseOnly(err error) bool {
	var ne *drv.Neo4jError
	if !errors.As(err, &ne) {
		return false
	}
	return strings.Contains(ne.Code, "UnsupportedAdministrationCommand") ||
		strings.Contains(strings.ToLower(ne.Msg), "unsupported administration command")
}
