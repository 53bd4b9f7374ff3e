package postgres

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancy"
)

// OwnershipConfig names where an id's owner is recorded.
type OwnershipConfig struct {
	// Table holds the ids: tagged (a tenant_id column) when TenantAware,
	// or a per-tenant table whose rows are all the tenant's.
	Table       naming.Name
	TenantAware bool
	// IDColumn defaults to "id".
	IDColumn string
	// MaxEntries bounds the positive cache (default 10,000).
	MaxEntries int
}

// Ownership returns an ownership gate over a PostgreSQL lookup. With no
// tenant cut at all (not tenant-aware, static table, plain client) tenancy
// is off for that table and the gate allows everything.
//
// The gate caches positives until told otherwise: after deleting or moving
// an id with SQL of your own, call c.Forget(ctx, table, tenant, id).
// Documents.Delete and Teardown tell the gates themselves. The client keeps
// the gates it built, so its delete paths can tell every gate over the
// table (forgetOwned) or every gate (forgetTenant); on a plain client they
// also tell other clients of the database (gatesync.go), and its gates
// cache only while it hears them. Build a gate once per table and keep it.
func (c *Client) Ownership(oc OwnershipConfig) *ownership.Gate {
	col := oc.IDColumn
	if col == "" {
		col = "id"
	}
	// A per-tenant table's lookup differs in text per tenant: unprepared,
	// like every statement set past the prepared budget (see stmtCache).
	s := sql{tagged: oc.TenantAware, unprepared: oc.Table.PerTenant()}
	colID := pgx.Identifier{col}.Sanitize()
	lookup := func(ctx context.Context, tenant tenancy.ID, id string) (bool, error) {
		pool, release, err := c.conn(ctx, tenant)
		if err != nil {
			return false, err
		}
		defer release()
		stmt := "SELECT EXISTS (SELECT 1 FROM " + ident(oc.Table, c.prefix, c.static, tenant).Sanitize() +
			" WHERE " + s.where() + colID + " = " + s.p(1) + ")"
		var owned bool
		err = pool.QueryRow(ctx, stmt, s.mode(args(s.tagged, tenant, id))...).Scan(&owned)
		return owned, err
	}
	off := !oc.TenantAware && !oc.Table.PerTenant() && c.routed == nil
	g := ownership.New(ownership.Config{
		Lookup:     lookup,
		MaxEntries: oc.MaxEntries,
		TenancyOff: off,
	})
	set := gatesOf(c)
	if !off {
		set.listen(c)
	}
	set.add(builtGate{table: oc.Table, col: col, gate: weak.Make(g)}, g)
	return g
}

// builtGate is a gate a client built, with what it looks ids up in. The
// gate is held weakly: one the caller dropped is pruned, so building gates
// repeatedly does not grow the set.
type builtGate struct {
	table naming.Name
	col   string
	gate  weak.Pointer[ownership.Gate]
}

// gateSet is the live gates one client built, and the state of the
// client's invalidation listener (gatesync.go).
type gateSet struct {
	mu    sync.Mutex
	gates []builtGate
	// listening: the listener runs (plain clients); synced: it is in
	// step, else every gate is suspended.
	listening, synced bool
	// prefix and static name the tables notices are matched against.
	prefix, static string
}

// add keeps b, whose gate is g, suspending it while a listener runs that
// is not in step.
func (s *gateSet) add(b builtGate, g *ownership.Gate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listening && !s.synced {
		g.Suspend()
	}
	s.gates = slices.DeleteFunc(s.gates, func(b builtGate) bool { return b.gate.Value() == nil })
	s.gates = append(s.gates, b)
}

func (s *gateSet) each(fn func(table naming.Name, col string, g *ownership.Gate)) {
	s.mu.Lock()
	gates := slices.Clone(s.gates)
	s.mu.Unlock()
	for _, b := range gates {
		if g := b.gate.Value(); g != nil {
			fn(b.table, b.col, g)
		}
	}
}

// gateSets maps a client to its gates. It is keyed weakly so a client no
// longer referenced (a stopped app) drops its entry.
var gateSets sync.Map // weak.Pointer[Client] → *gateSet

func gatesOf(c *Client) *gateSet {
	k := weak.Make(c)
	if v, ok := gateSets.Load(k); ok {
		return v.(*gateSet)
	}
	v, loaded := gateSets.LoadOrStore(k, &gateSet{})
	if !loaded {
		runtime.AddCleanup(c, func(k weak.Pointer[Client]) { gateSets.Delete(k) }, k)
	}
	return v.(*gateSet)
}

// gateSetOf is the client's gates, nil before the first.
func gateSetOf(c *Client) *gateSet {
	v, ok := gateSets.Load(weak.Make(c))
	if !ok {
		return nil
	}
	return v.(*gateSet)
}

// forgetOwned tells the client's gates over table (keyed by the "id"
// column) that tenant's id was removed. Call it after the delete commits.
func (c *Client) forgetOwned(table naming.Name, tenant tenancy.ID, id string) {
	v := gateSetOf(c)
	if v == nil {
		return
	}
	v.each(func(t naming.Name, col string, g *ownership.Gate) {
		if t == table && col == "id" {
			g.Forget(tenant, id)
		}
	})
}

// forgetTenant tells every gate of the client that tenant's ids are gone.
func (c *Client) forgetTenant(tenant tenancy.ID) {
	if v := gateSetOf(c); v != nil {
		v.each(func(_ naming.Name, _ string, g *ownership.Gate) { g.ForgetTenant(tenant) })
	}
}
