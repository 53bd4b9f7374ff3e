package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/tenancy"
)

// minAffineConns is the smallest own pool split by tenant: below it one
// connection per tenant group would leave a tenant too few.
const minAffineConns = 4

// affinePools is a module's own pool split into sub-pools by tenant, for
// modules with per-tenant schemas. A server connection caches every
// relation it touches and a client connection the statements it ran, so
// a pool whose connections each serve every tenant caches all of them on
// each connection and, once RecycleAfter closes them, rebuilds them on
// every call. Here a tenant's calls go to its home sub-pool while that
// one has a free connection, else to another, so a busy tenant still
// reaches every connection and no call waits while one is free.
//
// Every sub-pool holds one connection but the first, which holds two:
// calls with no tenant (a tenant-global relay, the gate's listener, which
// keeps one for good) start there, and the counts take it for one.
type affinePools struct {
	pools []*pgxpool.Pool
	// load is the calls each sub-pool has been handed and not given back;
	// padded, as every call of the module touches one.
	load    []paddedCount
	release []func() // release[i] gives back a call handed sub-pool i
}

type paddedCount struct {
	n atomic.Int32
	_ [60]byte
}

// affinitySplits reports whether a pool of maxConns connections is split.
func affinitySplits(maxConns int32) bool { return maxConns >= minAffineConns }

// openAffine builds the sub-pools of cfg's MaxConns connections, each
// with cfg's settings and hooks (RecycleAfter's among them).
func openAffine(ctx context.Context, cfg *pgxpool.Config) (*affinePools, error) {
	n := int(cfg.MaxConns) - 1 // sub-pool 0 takes two
	a := &affinePools{pools: make([]*pgxpool.Pool, n), load: make([]paddedCount, n), release: make([]func(), n)}
	minConns := cfg.MinConns
	for i := range n {
		pc := cfg.Copy()
		pc.MaxConns = 1
		if i == 0 {
			pc.MaxConns = 2
		}
		pc.MinConns = min(pc.MaxConns, max(minConns, 0))
		minConns -= pc.MinConns
		p, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			a.close()
			return nil, err
		}
		a.pools[i] = p
		count := &a.load[i].n
		a.release[i] = func() { count.Add(-1) }
	}
	return a, nil
}

// pick hands the call of tenant (zero: none) a sub-pool and the function
// that gives it back: the home sub-pool when it has a free connection,
// else any that has, else the least loaded (the home one on a tie). No
// call waits while a connection is free.
func (a *affinePools) pick(tenant tenancy.ID) (*pgxpool.Pool, func()) {
	home := 0
	if !tenant.IsZero() {
		home = int(tenantHash(tenant) % uint64(len(a.pools)))
	}
	if a.load[home].n.Add(1) == 1 {
		return a.pools[home], a.release[home]
	}
	least := a.load[home].n.Add(-1)
	best := home
	for j := 1; j < len(a.pools); j++ {
		i := (home + j) % len(a.pools)
		l := a.load[i].n.Load()
		if l == 0 {
			if a.load[i].n.Add(1) == 1 {
				return a.pools[i], a.release[i]
			}
			a.load[i].n.Add(-1)
			continue
		}
		if l < least {
			best, least = i, l
		}
	}
	a.load[best].n.Add(1)
	return a.pools[best], a.release[best]
}

// home is tenant's sub-pool (sub-pool 0 for none), for the escape hatch.
func (a *affinePools) home(tenant tenancy.ID) *pgxpool.Pool {
	if tenant.IsZero() {
		return a.pools[0]
	}
	return a.pools[tenantHash(tenant)%uint64(len(a.pools))]
}

func (a *affinePools) close() {
	for _, p := range a.pools {
		if p != nil {
			p.Close()
		}
	}
}

// tenantHash is FNV-1a over the id: ids need not be random (sequential
// ones are common), and their groups must still be even.
func tenantHash(id tenancy.ID) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range id.Bytes() {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}
