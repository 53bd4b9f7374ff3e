package migrate

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Gate is a module's RequiredVersion check, shared by the backend
// adapters: the start-up scan of the registry and the run-time check of
// one tenant's target, with the tenants found current remembered so that
// a current tenant costs no round trip per call. A nil Gate (NewGate of
// version 0) admits every call.
type Gate struct {
	module, backend string
	// need is the version the module's routes need.
	need int64
	cur  currentSet

	mu     sync.Mutex
	behind map[tenancy.ID]struct{} // tenants refused as behind since last found current
}

// NewGate is the gate of a module needing version need (nil when need is
// 0: nothing to check).
func NewGate(module, backend string, need int64) *Gate {
	if need <= 0 {
		return nil
	}
	return &Gate{module: module, backend: backend, need: need}
}

// Check refuses route's call for tenant (zero: a target all tenants
// share) when the version its target records, read by version, is below
// the version the module needs. target names the physical container (a server and database, a
// schema): a tenant found current on one target is not current on
// another. A tenant found current is remembered; version is not called
// again for it.
func (g *Gate) Check(ctx context.Context, tenant tenancy.ID, target, route string, version func(context.Context) (int64, error)) error {
	return g.CheckTenant(ctx, tenant, target, route, version, nil)
}

// CheckTenant is Check for a backend that can tell a tenant never
// provisioned from one behind: when version reads 0 for a tenant, missing
// (nil: the backend cannot tell) names the tenant's own container if it
// does not exist ("" if it does), and the call is refused as
// tenant_not_provisioned rather than behind. A tenant found current never
// pays for missing.
func (g *Gate) CheckTenant(ctx context.Context, tenant tenancy.ID, target, route string, version func(context.Context) (int64, error), missing func(context.Context) (string, error)) error {
	if g == nil || g.cur.has(tenant, target) {
		return nil
	}
	v, err := version(ctx)
	if err != nil {
		return err
	}
	if v == 0 && !tenant.IsZero() && missing != nil {
		what, err := missing(ctx)
		if err != nil {
			return err
		}
		if what != "" {
			return NotProvisioned(Unprovisioned{Module: g.module, Backend: g.backend, Route: route, Tenant: tenant,
				What: what, Cause: "and it has no migration records", Untouched: true})
		}
	}
	if v < g.need {
		g.setBehind(tenant, true)
		return behindError(g.module, g.backend, route, tenant, v, g.need)
	}
	g.cur.add(tenant, target)
	g.setBehind(tenant, false)
	return nil
}

// maxBehind bounds the tenants counted as behind; past it the count
// stays at the bound (it is a signal to migrate, not an inventory).
const maxBehind = 1 << 16

func (g *Gate) setBehind(tenant tenancy.ID, behind bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case behind && len(g.behind) < maxBehind:
		if g.behind == nil {
			g.behind = map[tenancy.ID]struct{}{}
		}
		g.behind[tenant] = struct{}{}
	case !behind:
		delete(g.behind, tenant)
	}
}

// Behind is how many tenants this process refused as behind the needed
// version and has not found current since (by a later call, a migration
// run or a teardown): the migrations a metric says are owed.
func (g *Gate) Behind() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.behind)
}

// Mark records that tenant's target is at version v after a migration
// run (current when v reaches the needed version).
func (g *Gate) Mark(tenant tenancy.ID, target string, v int64) {
	if g != nil && v >= g.need {
		g.cur.add(tenant, target)
		g.setBehind(tenant, false)
	}
}

// Forget drops tenant from the current set on every target (teardown).
func (g *Gate) Forget(tenant tenancy.ID) {
	if g != nil {
		g.cur.forget(tenant)
		g.setBehind(tenant, false)
	}
}

// staleShown is how many stale tenants a start-up refusal names.
const staleShown = 5

// CheckRegistry refuses to start (tenant_migration_behind) while a ready
// tenant of reg records a version of the module below the needed version,
// naming how many and the first staleShown.
func (g *Gate) CheckRegistry(ctx context.Context, reg Registry) error {
	if g == nil {
		return nil
	}
	stale, err := staleTenants(ctx, reg, g.module, g.need)
	if err != nil {
		return fmt.Errorf("%s: module %s: reading the tenant registry: %w", g.backend, g.module, err)
	}
	if len(stale) == 0 {
		return nil
	}
	names := make([]string, 0, staleShown)
	for _, t := range stale[:min(len(stale), staleShown)] {
		names = append(names, fmt.Sprintf("%s (at %d)", t.ID, t.Versions[g.module]))
	}
	more := ""
	if len(stale) > staleShown {
		more = fmt.Sprintf(" and %d more", len(stale)-staleShown)
	}
	return &tenancy.Error{
		Code: tenancy.CodeTenantMigrationBehind, Module: g.module, Backend: g.backend,
		Detail: fmt.Sprintf("%d registered tenants are behind migration version %d: %s%s", len(stale), g.need, strings.Join(names, ", "), more),
		Fix:    "run the module's migrations for every tenant (the service's migrate command, or MigrateAll), then start again",
	}
}

// maxCurrent bounds the (tenant, target) pairs remembered as current;
// past it the set is cleared (each tenant then pays one more version read).
const maxCurrent = 1 << 16

// currentSet is the (tenant, target) pairs of one gate whose target was
// found at or above the needed version. Versions only move forward, so a
// pair stays current until the tenant is torn down.
type currentSet struct {
	mu sync.RWMutex
	m  map[tenancy.ID]map[string]struct{}
	n  int
}

func (s *currentSet) has(t tenancy.ID, target string) bool {
	s.mu.RLock()
	_, ok := s.m[t][target]
	s.mu.RUnlock()
	return ok
}

func (s *currentSet) add(t tenancy.ID, target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || s.n >= maxCurrent {
		s.m, s.n = make(map[tenancy.ID]map[string]struct{}), 0
	}
	ts := s.m[t]
	if ts == nil {
		ts = make(map[string]struct{}, 1)
		s.m[t] = ts
	}
	if _, ok := ts[target]; !ok {
		ts[target] = struct{}{}
		s.n++
	}
}

func (s *currentSet) forget(t tenancy.ID) {
	s.mu.Lock()
	s.n -= len(s.m[t])
	delete(s.m, t)
	s.mu.Unlock()
}
