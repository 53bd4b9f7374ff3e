package postgres

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// defaultRecycleAfter is how many distinct tenants a connection of a
// module with per-tenant schemas serves before it is closed: a server
// connection caches the catalog entries of every relation it touches for
// its life (about 10 KB a table and its key), so one that reached 1,000
// tenants' five tables holds some 50 MB.
const defaultRecycleAfter = 1000

// RecycleAfter closes a connection of the module's own pool (Connect)
// once it has served n distinct tenants, when it is next acquired, so a
// server connection's catalog cache of per-tenant schemas stays bounded;
// the pool opens a fresh one as it needs. A module with per-tenant schemas
// does this after 1,000 tenants unless told otherwise; RecycleAfter(0)
// turns it off. Calls with no tenant bound (tenant-global relays) are not
// counted.
func RecycleAfter(n int) Option {
	return modules.Own(func(c *config) { c.recycle, c.recycleSet = n, true })
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
// A connection's state is its own (a connection serves one call at a
// time): acquire and release take no lock shared by the pool.
type tenantsServed struct {
	limit    int
	conns    sync.Map // *pgx.Conn -> *served
	recycled atomic.Int64
}

type served struct {
	seen map[tenancy.ID]struct{} // only by the call holding the connection
	full atomic.Bool
}

func newTenantsServed(limit int) *tenantsServed { return &tenantsServed{limit: limit} }

// install chains the pool's acquire and close hooks. A full connection is
// closed when it is next acquired, not when it is released: pgxpool runs
// an AfterRelease hook in a goroutine of its own, and the connection is
// not idle until that goroutine has run, so a hook there would cost every
// call a goroutine and the next acquire its connection.
func (s *tenantsServed) install(pc *pgxpool.Config) {
	prepare, closing := pc.PrepareConn, pc.BeforeClose
	pc.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		if v, ok := s.conns.Load(conn); ok && v.(*served).full.Load() {
			s.recycled.Add(1)
			return false, nil // pgxpool closes it and acquires another
		}
		if id, ok := tenancy.FromContext(ctx); ok {
			s.note(conn, id)
		}
		if prepare != nil {
			return prepare(ctx, conn)
		}
		return true, nil
	}
	pc.BeforeClose = func(conn *pgx.Conn) {
		s.conns.Delete(conn)
		if closing != nil {
			closing(conn)
		}
	}
}

// note counts id on conn, which the caller holds.
func (s *tenantsServed) note(conn *pgx.Conn, id tenancy.ID) {
	v, ok := s.conns.Load(conn)
	if !ok {
		v, _ = s.conns.LoadOrStore(conn, &served{seen: map[tenancy.ID]struct{}{}})
	}
	sv := v.(*served)
	if len(sv.seen) < s.limit {
		sv.seen[id] = struct{}{}
		sv.full.Store(len(sv.seen) >= s.limit)
	}
}
