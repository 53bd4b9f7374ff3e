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

// lifecycleTarget is the module's side of its migrate.Runner: the
// module's shared database once and each tenant's own databases (a
// routed driver, or a per-tenant database).
type lifecycleTarget struct {
	core   *core
	routes []*routeSpec
	// stmts are each step's statements, split and checked at fx.New.
	stmts    map[int64][]string
	teardown bool
}

// runner is the module's lifecycle, provided as *migrate.Runner
// name:"<module>".
func (m *lifecycleTarget) runner(set migrate.Set, reg migrate.Registry) *migrate.Runner {
	return migrate.NewRunner(migrate.Spec{Module: m.core.module, Backend: rules.Name, Set: set, Registry: reg, Gate: m.core.gate,
		Shared: m.shared(), PerTenant: m.perTenant(), AllowTeardown: m.teardown}, m)
}

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
func (m *lifecycleTarget) shared() bool {
	if m.core.routed() {
		return false
	}
	return slices.ContainsFunc(m.routes, func(s *routeSpec) bool { return !newRoute(m.core, s).perTenantDB })
}

// perTenant reports whether tenants have databases of their own.
func (m *lifecycleTarget) perTenant() bool {
	return m.core.routed() || slices.ContainsFunc(m.routes, func(s *routeSpec) bool { return newRoute(m.core, s).perTenantDB })
}

// targets are the databases of tenant (zero: the shared database), each
// once.
func (m *lifecycleTarget) targets(ctx context.Context, tenant tenancy.ID) ([]target, error) {
	if tenant.IsZero() {
		if !m.shared() {
			return nil, rules.Unbound(m.core.module, "")
		}
		return []target{{drv: m.core.plain, database: m.core.database, name: m.core.database, release: func() {}}}, nil
	}
	dbs, err := m.scopes(ctx, tenant, func(_ *route, sc scope) (string, bool) { return sc.database, true })
	if err != nil {
		return nil, err
	}
	out := make([]target, 0, len(dbs))
	for _, d := range dbs {
		out = append(out, target{drv: d.sc.drv, database: d.sc.database, name: d.sc.target, release: d.sc.release})
	}
	if len(out) == 0 {
		return nil, rules.WiringInvalid(m.core.module, "", fmt.Sprintf("Migrate for tenant %s: the module has no per-tenant database", tenant),
			"migrate the module's shared database: Migrate with the zero tenant, or MigrateAll")
	}
	return out, nil
}

// history is one database's TenantwireMigration nodes, open for one run.
type history struct {
	m    *lifecycleTarget
	t    target
	sess session
	key  string // the tenant's hex, or "shared"
	rec  map[string]any
	dry  bool
}

func (m *lifecycleTarget) Open(ctx context.Context, tenant tenancy.ID, dry bool) ([]migrate.History, error) {
	ts, err := m.targets(ctx, tenant)
	if err != nil {
		return nil, err
	}
	key := historyKey(tenant)
	out := make([]migrate.History, 0, len(ts))
	for i, t := range ts {
		h := &history{m: m, t: t, sess: t.drv.NewSession(ctx, t.database), key: key, dry: dry}
		out = append(out, h)
		if dry {
			continue
		}
		if err := h.prepare(ctx); err != nil {
			for _, o := range out {
				_ = o.Close(ctx, err)
			}
			for _, rest := range ts[i+1:] {
				rest.release()
			}
			return nil, err
		}
	}
	return out, nil
}

// prepare creates the history's constraint and drops forged nodes: a
// forged node would hold its step's key under the constraint, so the
// step could never be claimed.
func (h *history) prepare(ctx context.Context) error {
	module := h.m.core.module
	if err := ensureHistory(ctx, h.sess); err != nil {
		return fmt.Errorf("neo4j: module %s: creating the migration history constraint: %w", module, err)
	}
	if _, err := h.sess.ExecuteWrite(ctx, func(run runner) (any, error) {
		return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target}) WHERE NOT "+unmarked+" DELETE h",
			map[string]any{"module": module, "target": h.key})
	}); err != nil {
		return fmt.Errorf("neo4j: module %s: removing forged migration history: %w", module, err)
	}
	return nil
}

func (h *history) Key() string { return h.t.name }

// Applied reads the database's history. In a dry run a tenant's database
// that does not exist yet (provisioning would create it) has none, so
// every step is listed; a missing shared database stays an error (the
// deployment's).
func (h *history) Applied(ctx context.Context) ([]migrate.Applied, error) {
	applied, err := readHistory(ctx, h.sess, h.m.core.module, h.key)
	if h.dry && h.key != sharedTarget && notFound(err) {
		return nil, nil
	}
	return applied, err
}

func (h *history) Claim(ctx context.Context, st migrate.Step) (bool, error) {
	h.rec = map[string]any{"module": h.m.core.module, "target": h.key, "version": st.Version, "name": st.Name, "checksum": st.Checksum}
	return claimStep(ctx, h.sess, h.rec)
}

// Apply runs the step's statements and marks its node applied; a failed
// statement deletes the claim.
func (h *history) Apply(ctx context.Context, st migrate.Step) error {
	if err := h.m.runStep(ctx, h.sess, st); err != nil {
		_, _ = h.sess.ExecuteWrite(context.WithoutCancel(ctx), func(run runner) (any, error) {
			return run.Run(context.WithoutCancel(ctx), "MATCH (h:"+historyLabel+" {module: $module, target: $target, version: $version, state: 'applying'}) DELETE h", h.rec)
		})
		return err
	}
	_, err := h.sess.ExecuteWrite(ctx, func(run runner) (any, error) {
		return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target, version: $version}) SET h.state = 'applied', h.at = datetime()", h.rec)
	})
	return err
}

// Close: schema commands commit on their own; nothing is left to undo.
func (h *history) Close(ctx context.Context, _ error) error {
	err := h.sess.Close(ctx)
	h.t.release()
	return err
}

// runStep runs the step's statements, each auto-commit (schema commands
// take their own transaction), then waits for the indexes it created to
// come online, so that "applied" means usable.
func (m *lifecycleTarget) runStep(ctx context.Context, sess session, st migrate.Step) error {
	for _, s := range m.stmts[st.Version] {
		if err := runSchema(ctx, sess, s); err != nil {
			if enterpriseOnly(err) || isEnterpriseSchema(err) {
				err = fmt.Errorf("%w: %w", ErrEnterpriseRequired, err)
			}
			return &migrate.StepError{Statement: s, Err: err}
		}
	}
	if _, err := sess.Run(ctx, "CALL db.awaitIndexes(300)", nil); err != nil {
		return &migrate.StepError{Statement: "CALL db.awaitIndexes(300)", Err: err}
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
			return false, migrate.ErrStepClaimed
		case recs[0].Values[0] == "applied":
			return false, nil
		case recs[0].Values[1] == true:
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, migrate.ErrStepClaimed
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

// historyKey is the target property of tenant's history nodes: its hex,
// or "shared" for the zero tenant.
func historyKey(tenant tenancy.ID) string {
	if tenant.IsZero() {
		return sharedTarget
	}
	return tenant.Hex()
}
