package postgres

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/tenancy"
)

// defaultRecycleAfter is how many distinct tenants a connection of a
// module with per-tenant schemas serves before it is closed: a server
// connection caches the catalog entries of every relation it touches for
// its life (about 10 KB a table and its key), so one that reached 1,000
// tenants' five tables holds some 50 MB.
const defaultRecycleAfter = 1000

// RecycleAfter closes a connection of the module's own pool (Connect)
// once it has served n distinct tenants, when it is next released, so a
// server connection's catalog cache of per-tenant schemas stays bounded;
// the pool opens a fresh one as it needs. A module with per-tenant schemas
// does this after 1,000 tenants unless told otherwise; RecycleAfter(0)
// turns it off. Calls with no tenant bound (tenant-global relays) are not
// counted.
func RecycleAfter(n int) Option {
	return func(c *config) { c.recycle, c.recycleSet = n, true }
}

// recycleProblems refuses a RecycleAfter that cannot apply.
func (cfg *config) recycleProblems() []error {
	switch {
	case !cfg.recycleSet:
		return nil
	case cfg.recycle < 0:
		return []error{rules.WiringInvalid(cfg.name, "", "RecycleAfter is negative", "pass RecycleAfter a positive number of tenants, or 0 to never recycle")}
	case cfg.recycle > 0 && cfg.dsn == "":
		return []error{rules.WiringInvalid(cfg.name, "", "RecycleAfter applies to the module's own pool, and this module has none",
			"use postgres.Connect, or on a pool of your own (postgres.Use) set its MaxConnLifetime; a routed client's pools serve one tenant each")}
	}
	return nil
}

// recycleLimit is the number of tenants after which the module's own
// pool closes a connection; zero: never.
func (cfg *config) recycleLimit() int {
	if cfg.recycleSet {
		return cfg.recycle
	}
	if cfg.life.perTenantSchema {
		return defaultRecycleAfter
	}
	return 0
}

// tenantsServed tracks, per connection of one pool, the distinct tenants
// it served, and has the pool close a connection that reached the limit.
type tenantsServed struct {
	limit    int
	mu       sync.Mutex
	conns    map[*pgx.Conn]map[tenancy.ID]struct{}
	recycled atomic.Int64
}

func newTenantsServed(limit int) *tenantsServed {
	return &tenantsServed{limit: limit, conns: map[*pgx.Conn]map[tenancy.ID]struct{}{}}
}

// install chains the pool's acquire, release and close hooks.
func (s *tenantsServed) install(pc *pgxpool.Config) {
	prepare, release, closing := pc.PrepareConn, pc.AfterRelease, pc.BeforeClose
	pc.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		if id, ok := tenancy.FromContext(ctx); ok {
			s.note(conn, id)
		}
		if prepare != nil {
			return prepare(ctx, conn)
		}
		return true, nil
	}
	pc.AfterRelease = func(conn *pgx.Conn) bool {
		if s.full(conn) {
			s.recycled.Add(1)
			return false
		}
		return release == nil || release(conn)
	}
	pc.BeforeClose = func(conn *pgx.Conn) {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		if closing != nil {
			closing(conn)
		}
	}
}

func (s *tenantsServed) note(conn *pgx.Conn, id tenancy.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.conns[conn]
	if seen == nil {
		seen = map[tenancy.ID]struct{}{}
		s.conns[conn] = seen
	}
	if len(seen) < s.limit {
		seen[id] = struct{}{}
	}
}

func (s *tenantsServed) full(conn *pgx.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns[conn]) >= s.limit
}
