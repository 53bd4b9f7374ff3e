package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// registry is the module's tenant registry, if any.
func (c *Client) registry() migrate.Registry {
	if c.life == nil {
		return nil
	}
	return c.life.registry
}

// appliedVersion is the newest version applied to tenant's target (0 when
// nothing was).
func (c *Client) appliedVersion(ctx context.Context, pool pgxPool, tenant tenancy.ID) (int64, error) {
	table := pgx.Identifier{c.target(tenant), migrationTable}.Sanitize()
	var v int64
	err := pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+table+" WHERE module = $1", c.module).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // no table, no schema
		return 0, nil
	}
	return v, err
}

// ensureCurrent refuses a call for a tenant whose target is behind the
// required version. A tenant found current is remembered, so the check
// costs a round trip once per tenant, not per call.
func (c *Client) ensureCurrent(ctx context.Context, tenant tenancy.ID, pool pgxPool, route string) error {
	l := c.life
	if l == nil || l.required == 0 {
		return nil
	}
	if l.shared {
		tenant = tenancy.ID{}
	}
	if l.current.has(tenant) {
		return nil
	}
	v, err := c.appliedVersion(ctx, pool, tenant)
	if err != nil {
		return err
	}
	if v < l.required {
		return migrate.Behind(c.module, Rules.Name, route, tenant, v, l.required)
	}
	l.current.add(tenant)
	return nil
}

// staleShown is how many stale tenants a start-up refusal names.
const staleShown = 5

// checkVersions refuses to start while the shared tables or any registered
// tenant are behind the required version.
func (c *Client) checkVersions(ctx context.Context) error {
	l := c.life
	if l.shared {
		pool, release, err := c.conn(ctx, tenancy.ID{})
		if err != nil {
			return err
		}
		defer release()
		return c.ensureCurrent(ctx, tenancy.ID{}, pool, "")
	}
	stale, err := migrate.Stale(ctx, l.registry, c.module, l.required)
	if err != nil {
		return fmt.Errorf("postgres: module %s: reading the tenant registry: %w", c.module, err)
	}
	if len(stale) == 0 {
		return nil
	}
	names := make([]string, 0, staleShown)
	for _, t := range stale[:min(len(stale), staleShown)] {
		names = append(names, fmt.Sprintf("%s (at %d)", t.ID, t.Versions[c.module]))
	}
	more := ""
	if len(stale) > staleShown {
		more = fmt.Sprintf(" and %d more", len(stale)-staleShown)
	}
	return &tenancy.Error{
		Code: tenancy.CodeTenantMigrationBehind, Module: c.module, Backend: Rules.Name,
		Detail: fmt.Sprintf("%d registered tenants are behind migration version %d: %s%s", len(stale), l.required, strings.Join(names, ", "), more),
		Fix:    "run the module's migrations for every tenant (the service's migrate command, or MigrateAll), then start again",
	}
}

// maxCurrent bounds the tenants remembered as current; past it the set is
// cleared (each tenant then pays one more version read).
const maxCurrent = 1 << 16

// currentSet is the tenants of one client (one module) whose target was
// found at or above the required version. Versions only move forward, so
// a tenant stays current until torn down (forget).
type currentSet struct {
	mu sync.RWMutex
	m  map[tenancy.ID]struct{}
}

func (s *currentSet) has(t tenancy.ID) bool {
	s.mu.RLock()
	_, ok := s.m[t]
	s.mu.RUnlock()
	return ok
}

func (s *currentSet) add(t tenancy.ID) {
	s.mu.Lock()
	if s.m == nil || len(s.m) >= maxCurrent {
		s.m = make(map[tenancy.ID]struct{})
	}
	s.m[t] = struct{}{}
	s.mu.Unlock()
}

func (s *currentSet) forget(t tenancy.ID) {
	s.mu.Lock()
	delete(s.m, t)
	s.mu.Unlock()
}
