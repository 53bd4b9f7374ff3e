package neo4j

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Migrator applies a module's migrations (the Migrations option) to the
// module's shared database once and to each tenant's own database (a
// routed driver, or a per-tenant database); provided as *Migrator
// name:"<module>".
type Migrator struct {
	core   *core
	routes []*routeSpec
	set    migrate.Set
	stmts  map[int64][]string
}

// Set is the module's ordered steps.
func (m *Migrator) Set() migrate.Set { return m.set }

// The history of a database: one node per applied step, keyed by
// (module, target, version) under a uniqueness constraint, so that the
// node is also the claim two migrators race for.
const (
	historyLabel      = "TenantwireMigration"
	historyConstraint = "tenantwire_migration_key"
	sharedTarget      = "shared"
	// unmarked: the framework writes history nodes without the tenant
	// property, so a node carrying it was written through a tagged route
	// (before labels were reserved) and is never trusted.
	unmarked = "h." + TenantProperty + " IS NULL"
)

// claimTTL is how long an unfinished claim (a migrator that crashed
// mid-step) blocks other migrators before one may take it over;
// claimWait is how long a migrator waits for another one's fresh claim to
// finish before it reports ErrStepClaimed.
var (
	claimTTL  = 10 * time.Minute
	claimWait = 30 * time.Second
)

// ErrStepClaimed: another migrator has been applying the step for longer
// than this one waited; the tenant is reported failed for this run and a
// rerun completes it.
var ErrStepClaimed = errors.New("another migrator is applying this step; rerun once it finished")

// StepError is a statement the server refused. Schema commands are not
// transactional together: the file's earlier statements stay applied, the
// step is not recorded, and its next run repeats them (they are IF [NOT]
// EXISTS, so that is a no-op).
type StepError struct {
	Tenant    tenancy.ID // zero: the shared database
	Module    string
	File      string
	Statement string
	Err       error
}

func (e *StepError) Error() string {
	who := "the shared database"
	if !e.Tenant.IsZero() {
		who = "tenant " + e.Tenant.String()
	}
	return fmt.Sprintf("neo4j: module %s: migration %s failed for %s (not recorded) at %q: %v", e.Module, e.File, who, e.Statement, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// target is one database a set runs on.
type target struct {
	drv      driver
	database string
	// name is the scope's target: what the route check keys a tenant's
	// current database by.
	name    string
	release func()
}

// shared reports whether the module has a database all tenants share:
// a plain driver and a route without a per-tenant database.
func (m *Migrator) shared() bool {
	if m.core.routed() {
		return false
	}
	return slices.ContainsFunc(m.routes, func(s *routeSpec) bool { return !newRoute(m.core, s).perTenantDB })
}

// perTenant reports whether tenants have databases of their own.
func (m *Migrator) perTenant() bool {
	return m.core.routed() || slices.ContainsFunc(m.routes, func(s *routeSpec) bool { return newRoute(m.core, s).perTenantDB })
}

// targets are the databases of tenant (zero: the shared database), each
// once.
func (m *Migrator) targets(ctx context.Context, tenant tenancy.ID) ([]target, error) {
	if tenant.IsZero() {
		if !m.shared() {
			return nil, rules.Unbound(m.core.module, "")
		}
		return []target{{drv: m.core.plain, database: m.core.database, name: m.core.database, release: func() {}}}, nil
	}
	var out []target
	seen := map[string]bool{}
	for _, s := range m.routes {
		r := newRoute(m.core, s)
		if !r.perTenantDB && !m.core.routed() {
			continue
		}
		sc, err := r.openFor(ctx, tenant)
		if err != nil {
			for _, t := range out {
				t.release()
			}
			return nil, err
		}
		if seen[sc.database] {
			sc.release()
			continue
		}
		seen[sc.database] = true
		out = append(out, target{drv: sc.drv, database: sc.database, name: sc.target, release: sc.release})
	}
	if len(out) == 0 {
		return nil, rules.WiringInvalid(m.core.module, "", fmt.Sprintf("Migrate for tenant %s: the module has no per-tenant database", tenant),
			"migrate the module's shared database: Migrate with the zero tenant, or MigrateAll")
	}
	return out, nil
}

// Migrate applies the pending steps to tenant's databases (zero tenant:
// the module's shared database) and returns what it applied.
func (m *Migrator) Migrate(ctx context.Context, tenant tenancy.ID) ([]migrate.Change, error) {
	return m.migrate(ctx, tenant, false)
}

// PlanMigrate lists the steps Migrate would apply, changing nothing.
func (m *Migrator) PlanMigrate(ctx context.Context, tenant tenancy.ID) ([]migrate.Change, error) {
	return m.migrate(ctx, tenant, true)
}

func (m *Migrator) migrate(ctx context.Context, tenant tenancy.ID, dry bool) ([]migrate.Change, error) {
	ts, err := m.targets(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, t := range ts {
			t.release()
		}
	}()
	var changes []migrate.Change
	for _, t := range ts {
		ch, err := m.migrateTarget(ctx, tenant, t, dry)
		changes = append(changes, ch...)
		if err != nil {
			return changes, err
		}
	}
	return changes, nil
}

func (m *Migrator) migrateTarget(ctx context.Context, tenant tenancy.ID, t target, dry bool) ([]migrate.Change, error) {
	sess := t.drv.NewSession(ctx, t.database)
	defer sess.Close(ctx)
	key := sharedTarget
	if !tenant.IsZero() {
		key = tenant.Hex()
	}
	if !dry {
		if err := ensureHistory(ctx, sess); err != nil {
			return nil, fmt.Errorf("neo4j: module %s: creating the migration history constraint: %w", m.core.module, err)
		}
		// A forged node would hold its step's key under the constraint,
		// so the step could never be claimed.
		if _, err := sess.ExecuteWrite(ctx, func(run runner) (any, error) {
			return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target}) WHERE NOT "+unmarked+" DELETE h",
				map[string]any{"module": m.core.module, "target": key})
		}); err != nil {
			return nil, fmt.Errorf("neo4j: module %s: removing forged migration history: %w", m.core.module, err)
		}
	}
	applied, err := readHistory(ctx, sess, m.core.module, key)
	if err != nil {
		return nil, fmt.Errorf("neo4j: module %s: reading the migration history: %w", m.core.module, err)
	}
	pending, err := m.set.Pending(applied, m.core.module, rules.Name, tenant)
	if err != nil {
		return nil, err
	}
	var changes []migrate.Change
	for _, st := range pending {
		ch := migrate.Change{Tenant: tenant, Module: m.core.module, Version: st.Version, Name: st.Name}
		if dry {
			changes = append(changes, ch)
			continue
		}
		rec := map[string]any{"module": m.core.module, "target": key, "version": st.Version, "name": st.Name, "checksum": st.Checksum}
		mine, err := claimStep(ctx, sess, rec)
		if err != nil {
			return changes, fmt.Errorf("neo4j: module %s: tenant %s, migration %s: %w", m.core.module, tenant, st.File(), err)
		}
		if !mine { // another migrator applied it meanwhile
			continue
		}
		if err := m.runStep(ctx, sess, tenant, st); err != nil {
			_, _ = sess.ExecuteWrite(context.WithoutCancel(ctx), func(run runner) (any, error) {
				return run.Run(context.WithoutCancel(ctx), "MATCH (h:"+historyLabel+" {module: $module, target: $target, version: $version, state: 'applying'}) DELETE h", rec)
			})
			return changes, err
		}
		if _, err := sess.ExecuteWrite(ctx, func(run runner) (any, error) {
			return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target, version: $version}) SET h.state = 'applied', h.at = datetime()", rec)
		}); err != nil {
			return changes, err
		}
		changes = append(changes, ch)
	}
	if !dry {
		m.core.gate.Mark(tenant, t.name, m.set.Latest())
	}
	return changes, nil
}

// runStep runs the step's statements, each auto-commit (schema commands
// take their own transaction), then waits for the indexes it created to
// come online, so that "applied" means usable.
func (m *Migrator) runStep(ctx context.Context, sess session, tenant tenancy.ID, st migrate.Step) error {
	for _, s := range m.stmts[st.Version] {
		if err := runSchema(ctx, sess, s); err != nil {
			if enterpriseOnly(err) || isEnterpriseSchema(err) {
				err = fmt.Errorf("%w: %w", ErrEnterpriseRequired, err)
			}
			return &StepError{Tenant: tenant, Module: m.core.module, File: st.File(), Statement: s, Err: err}
		}
	}
	if _, err := sess.Run(ctx, "CALL db.awaitIndexes(300)", nil); err != nil {
		return &StepError{Tenant: tenant, Module: m.core.module, File: st.File(), Statement: "CALL db.awaitIndexes(300)", Err: err}
	}
	return nil
}

// isEnterpriseSchema recognises Community's refusal of NODE KEY, property
// existence and property type constraints.
func isEnterpriseSchema(err error) bool {
	var ne *drv.Neo4jError
	return errors.As(err, &ne) && strings.Contains(strings.ToLower(ne.Msg), "enterprise edition")
}

// ensureHistory creates the history's uniqueness constraint when it is
// missing. Two migrators creating it at once on one database can deadlock
// on the label's schema lock (a transient error) or be told it exists.
func ensureHistory(ctx context.Context, sess session) error {
	q := "CREATE CONSTRAINT " + historyConstraint + " IF NOT EXISTS FOR (h:" + historyLabel + ") REQUIRE (h.module, h.target, h.version) IS UNIQUE"
	recs, err := sess.Run(ctx, "SHOW CONSTRAINTS YIELD name WHERE name = $n RETURN name", map[string]any{"n": historyConstraint})
	if err != nil || len(recs) > 0 {
		return err
	}
	err = runSchema(ctx, sess, q)
	if err != nil && strings.Contains(neoCode(err), "AlreadyExists") {
		return nil
	}
	return err
}

// runSchema runs a schema command auto-commit, again after a transient
// error (a deadlock with another schema change on the database): the
// driver retries only managed transactions, and every command a step may
// hold is safe to repeat.
func runSchema(ctx context.Context, sess session, q string) error {
	var err error
	for attempt := range 5 {
		if _, err = sess.Run(ctx, q, nil); err == nil || !strings.HasPrefix(neoCode(err), "Neo.TransientError.") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 50 * time.Millisecond):
		}
	}
	return err
}

func neoCode(err error) string {
	var ne *drv.Neo4jError
	if errors.As(err, &ne) {
		return ne.Code
	}
	return ""
}

func readHistory(ctx context.Context, sess session, module, key string) ([]migrate.Applied, error) {
	recs, err := sess.ExecuteRead(ctx, func(run runner) (any, error) {
		return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target, state: 'applied'}) WHERE "+unmarked+" RETURN h.version, h.name, h.checksum ORDER BY h.version",
			map[string]any{"module": module, "target": key})
	})
	if err != nil {
		return nil, err
	}
	var out []migrate.Applied
	for _, r := range recs.([]*drv.Record) {
		v, _ := r.Values[0].(int64)
		n, _ := r.Values[1].(string)
		c, _ := r.Values[2].(string)
		out = append(out, migrate.Applied{Version: v, Name: n, Checksum: c})
	}
	return out, nil
}

// claimStep takes the step for this migrator by creating its history node
// as 'applying': the uniqueness constraint lets one CREATE win. It returns
// false when another migrator applied the step, waits while another one
// holds a fresh claim (up to claimWait, then ErrStepClaimed), retries when
// that claim is released, and takes over a claim older than claimTTL.
func claimStep(ctx context.Context, sess session, rec map[string]any) (bool, error) {
	deadline := time.Now().Add(claimWait)
	for {
		_, err := sess.ExecuteWrite(ctx, func(run runner) (any, error) {
			return run.Run(ctx, "CREATE (:"+historyLabel+" {module: $module, target: $target, version: $version, name: $name, checksum: $checksum, state: 'applying', at: datetime()})", rec)
		})
		if err == nil {
			return true, nil
		}
		if !strings.Contains(neoCode(err), "ConstraintValidationFailed") {
			return false, err
		}
		res, err := sess.ExecuteWrite(ctx, func(run runner) (any, error) {
			// Take over a stale claim in the same statement that reads
			// it, after taking the node's write lock (the first SET), so
			// the read sees any other takeover committed meanwhile and two
			// migrators cannot both take it over.
			return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target, version: $version}) WHERE "+unmarked+" "+
				"SET h.lock = true REMOVE h.lock WITH h, h.state = 'applying' AND h.at < datetime() - duration({seconds: $ttl}) AS stale "+
				"SET h.at = CASE WHEN stale THEN datetime() ELSE h.at END, h.checksum = CASE WHEN stale THEN $checksum ELSE h.checksum END "+
				"RETURN h.state, stale", withTTL(rec))
		})
		if err != nil {
			return false, err
		}
		recs := res.([]*drv.Record)
		switch {
		case len(recs) == 0 && time.Now().Before(deadline): // released after a failure: claim again
			continue
		case len(recs) == 0:
			return false, ErrStepClaimed
		case recs[0].Values[0] == "applied":
			return false, nil
		case recs[0].Values[1] == true:
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, ErrStepClaimed
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func withTTL(rec map[string]any) map[string]any {
	out := make(map[string]any, len(rec)+1)
	for k, v := range rec {
		out[k] = v
	}
	out["ttl"] = int64(claimTTL / time.Second)
	return out
}

// MigrateAll migrates the module's shared database once (when it has
// one) and every tenant's own databases (tenants, or reg's ready tenants
// when nil), with bounded concurrency, failures reported per tenant while
// the others go on, and each tenant's version recorded in reg.
func (m *Migrator) MigrateAll(ctx context.Context, tenants []tenancy.ID, reg migrate.Registry, o migrate.Options) (migrate.Report, error) {
	op := "migrate " + m.core.module
	if o.DryRun {
		op += " (dry run)"
	}
	var list []tenancy.ID
	if m.shared() {
		list = append(list, tenancy.ID{})
	}
	if m.perTenant() {
		if tenants == nil {
			if reg == nil {
				return migrate.Report{Op: op}, fmt.Errorf("neo4j: module %s: MigrateAll without a tenant list needs a registry", m.core.module)
			}
			var err error
			if tenants, err = migrate.ReadyTenants(ctx, reg); err != nil {
				return migrate.Report{Op: op}, err
			}
		}
		list = append(list, tenants...)
	}
	return migrate.Each(ctx, op, list, o, func(ctx context.Context, t tenancy.ID, rec *migrate.Recorder) error {
		ch, err := m.migrate(ctx, t, o.DryRun)
		rec.Add(ch...)
		if err != nil || reg == nil || o.DryRun || t.IsZero() {
			return err
		}
		return reg.SetVersion(ctx, t, m.core.module, m.set.Latest())
	}), nil
}
