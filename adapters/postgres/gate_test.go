package postgres_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func TestOwnershipGate(t *testing.T) {
	run := unique()
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("own_" + run), Write: naming.Shared("own_" + run)}),
		postgres.Document[int]("ns", postgres.DocumentConfig{Read: naming.PerTenant("own"), Write: naming.PerTenant("own")}),
	), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA, tenancytest.TenantB) })
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	if _, err := d.Create(ctxA, "m1", item{}); err != nil {
		t.Fatal(err)
	}
	for name, g := range map[string]*ownership.Gate{
		"tagged": c.Ownership(postgres.OwnershipConfig{Table: naming.Shared("own_" + run), TenantAware: true}),
	} {
		if err := g.Check(ctxA, "m1"); err != nil {
			t.Errorf("%s: owner denied: %v", name, err)
		}
		if err := g.Check(ctxB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: B allowed on A's id: %v", name, err)
		}
		if err := g.Check(context.Background(), "m1"); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
			t.Errorf("%s: unbound: %v", name, err)
		}
	}
	// A per-tenant table: existence in the tenant's own schema is ownership.
	g := c.Ownership(postgres.OwnershipConfig{Table: naming.PerTenant("own")})
	if err := g.Check(ctxB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("per-tenant: %v", err)
	}
	// Fail closed: a query error (here a missing table) denies.
	bad := c.Ownership(postgres.OwnershipConfig{Table: naming.Shared("missing_" + run), TenantAware: true})
	if err := bad.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("query error allowed: %v", err)
	}
	// Tenancy off: the gate short-circuits.
	off := c.Ownership(postgres.OwnershipConfig{Table: naming.Shared("own_" + run)})
	if err := off.Check(context.Background(), "anything"); err != nil {
		t.Errorf("tenancy off: %v", err)
	}
}

// TestOwnershipGateLifecycle runs the gate on its real lookup, tagged and
// per-tenant: a real owner is allowed and others denied; an id denied and
// then created by the tenant is allowed at once (denials are not cached);
// an id deleted by its owner and re-created by another tenant is denied to
// the old owner once the gate is told, and allowed to the new one.
func TestOwnershipGateLifecycle(t *testing.T) {
	run := unique()
	var tagged, ns *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"),
		postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("gl_" + run), Write: naming.Shared("gl_" + run)}),
		postgres.Document[item]("ns", postgres.DocumentConfig{Read: naming.PerTenant("gl"), Write: naming.PerTenant("gl")}),
	), named("tagged", &tagged), named("ns", &ns))
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	for name, tc := range map[string]struct {
		docs *postgres.Documents[item]
		gate *ownership.Gate
	}{
		"tagged":     {tagged, c.Ownership(postgres.OwnershipConfig{Table: naming.Shared("gl_" + run), TenantAware: true})},
		"per-tenant": {ns, c.Ownership(postgres.OwnershipConfig{Table: naming.PerTenant("gl")})},
	} {
		d, g := tc.docs, tc.gate
		if _, err := d.Create(ctxA, "m1", item{}); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctxA, "m1"); err != nil {
			t.Errorf("%s: the owner was denied by the real lookup: %v", name, err)
		}
		if err := g.Check(ctxB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: B allowed on A's id: %v", name, err)
		}
		// Denied, then owned.
		if err := g.Check(ctxB, "m2"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: B allowed on an id nobody owns: %v", name, err)
		}
		if _, err := d.Create(ctxB, "m2", item{}); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctxB, "m2"); err != nil {
			t.Errorf("%s: denied, then owned, still denied: %v", name, err)
		}
		// Owned, deleted, re-created by another tenant.
		if err := d.Delete(ctxA, "m1"); err != nil {
			t.Fatal(err)
		}
		// Delete tells the gate itself: no Forget here.
		if _, err := d.Create(ctxB, "m1", item{}); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: the old owner allowed on a re-created id: %v", name, err)
		}
		if err := g.Check(ctxB, "m1"); err != nil {
			t.Errorf("%s: the new owner denied: %v", name, err)
		}
	}
}

// replica is one process's view of a shared database in the cross-replica
// gate tests: its own module, pool and gate; lookups counts the gate's
// queries on that pool.
type replica struct {
	c       *postgres.Client
	docs    *postgres.Documents[item]
	gate    *ownership.Gate
	lookups *atomic.Int64
}

// lookupCounter counts the ownership gate's lookups on a pool.
type lookupCounter struct{ n *atomic.Int64 }

func (l lookupCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, "SELECT EXISTS") {
		l.n.Add(1)
	}
	return ctx
}

func (lookupCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// newReplica starts an app on its own pool to dsn, with a tagged document
// route over table and a gate over it, and extra module options.
func newReplica(t *testing.T, dsn, prefix, table string, extra ...postgres.Option) replica {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	r := replica{lookups: new(atomic.Int64)}
	cfg.ConnConfig.Tracer = lookupCounter{r.lookups}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the app's stop, registered later
	r.c = start(t, postgres.Module("pg", append([]postgres.Option{postgres.Use(pool), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(table), Write: naming.Shared(table)})}, extra...)...), &r.docs)
	r.gate = r.c.Ownership(postgres.OwnershipConfig{Table: naming.Shared(table), TenantAware: true})
	return r
}

// cached waits until the gate answers ctx's id from its cache (its
// invalidation listener is in step), failing if it never does.
func (r replica) cached(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := r.gate.Check(ctx, id); err != nil {
			t.Fatalf("the owner was denied: %v", err)
		}
		before := r.lookups.Load()
		if err := r.gate.Check(ctx, id); err == nil && r.lookups.Load() == before {
			return
		}
	}
	t.Fatal("the gate never answered from its cache")
}

// deniedWithin polls the gate until it denies ctx's id and returns how
// long that took, failing after limit.
func (r replica) deniedWithin(t *testing.T, ctx context.Context, id string, limit time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for time.Since(began) < limit {
		if err := r.gate.Check(ctx, id); errors.Is(err, ownership.ErrNotOwned) {
			return time.Since(began)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("another replica's gate still allowed the old owner %v after the change", limit)
	return 0
}

// gateStaleBound is the longest another replica's gate may answer from its
// cache after a delete committed: a heartbeat interval and its wait
// (gateBeat + gateBeatWait in gatesync.go); docs/security.md states it.
const gateStaleBound = 3 * time.Second

// TestOwnershipGateAcrossReplicas: two clients over one database, as two
// replicas. Replica 2's gate has A's id cached; replica 1 deletes it and B
// creates the same id; replica 2's gate must deny A within the bound (in
// practice once the notice arrives). The same after a teardown, and for a
// delete of the caller's own told through Client.Forget.
func TestOwnershipGateAcrossReplicas(t *testing.T) {
	run := unique()
	prefix, table := "tw"+run+"_", "rg_"+run
	one := newReplica(t, testsvc.PostgresURL(t), prefix, table)
	two := newReplica(t, testsvc.PostgresURL(t), prefix, table)
	provision(t, one.c, tenancytest.TenantA, tenancytest.TenantB)
	t.Cleanup(func() { teardown(t, one.c, tenancytest.TenantA, tenancytest.TenantB) })

	if _, err := one.docs.Create(ctxA, "m1", item{}); err != nil {
		t.Fatal(err)
	}
	two.cached(t, ctxA, "m1")
	if err := one.docs.Delete(ctxA, "m1"); err != nil {
		t.Fatal(err)
	}
	if _, err := one.docs.Create(ctxB, "m1", item{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("delete: replica 2 denied the old owner %v after replica 1's delete returned", two.deniedWithin(t, ctxA, "m1", gateStaleBound))
	two.cached(t, ctxB, "m1")

	if err := one.c.Teardown(context.Background(), tenancytest.TenantB); err != nil {
		t.Fatal(err)
	}
	t.Logf("teardown: replica 2 denied the torn-down tenant %v after it", two.deniedWithin(t, ctxB, "m1", gateStaleBound))

	// A delete of the caller's own, outside the routes, told with Forget.
	provision(t, one.c, tenancytest.TenantB)
	if _, err := one.docs.Create(ctxA, "m2", item{}); err != nil {
		t.Fatal(err)
	}
	two.cached(t, ctxA, "m2")
	pool, _, err := one.c.Pool(ctxA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), "DELETE FROM "+pgx.Identifier{"public", table}.Sanitize()+" WHERE id = 'm2'"); err != nil {
		t.Fatal(err)
	}
	if err := one.c.Forget(context.Background(), naming.Shared(table), tenancytest.TenantA, "m2"); err != nil {
		t.Fatal(err)
	}
	t.Logf("Forget: replica 2 denied the old owner %v after it", two.deniedWithin(t, ctxA, "m2", gateStaleBound))
}

// TestOwnershipGateSuspendsWithoutChannel: when a replica's invalidation
// channel is lost (its listening connection killed), its gates drop what
// they cached and look every id up, so a delete made meanwhile is never
// answered from the cache; they cache again once the channel is back.
func TestOwnershipGateSuspendsWithoutChannel(t *testing.T) {
	run := unique()
	prefix, table, app := "tw"+run+"_", "rs_"+run, "tw_gate_"+run
	one := newReplica(t, testsvc.PostgresURL(t), prefix, table)
	two := newReplica(t, testsvc.PostgresURL(t)+"&application_name="+app, prefix, table)
	provision(t, one.c, tenancytest.TenantA)
	t.Cleanup(func() { teardown(t, one.c, tenancytest.TenantA) })
	if _, err := one.docs.Create(ctxA, "m1", item{}); err != nil {
		t.Fatal(err)
	}
	two.cached(t, ctxA, "m1")
	su := superuser(t)
	var killed int
	if err := su.QueryRow(context.Background(), "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE '%pg_notify%'", app).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("killed %d listening connections, want 1 (%v)", killed, err)
	}
	for deadline := time.Now().Add(gateStaleBound); two.gate.Len() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gate kept its cache after its channel was lost")
		}
	}
	// Nothing cached while the channel is down: a delete made now is seen
	// by the next check, with no notice heard.
	if _, err := su.Exec(context.Background(), "DELETE FROM "+pgx.Identifier{"public", table}.Sanitize()+" WHERE id = 'm1'"); err != nil {
		t.Fatal(err)
	}
	if err := two.gate.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("a delete made while the channel was down was answered from the cache: %v", err)
	}
	if _, err := one.docs.Create(ctxA, "m1", item{}); err != nil {
		t.Fatal(err)
	}
	two.cached(t, ctxA, "m1") // the listener reconnected and caching resumed
}

// stallProxy forwards TCP connections to a server and can freeze them: a
// double for a network that stops delivering without closing anything,
// which a real server cannot be made to do.
type stallProxy struct {
	addr   string
	mu     sync.Mutex
	frozen chan struct{} // nil when flowing; closed on thaw
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{addr: ln.Addr().String()}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); p.thaw(); conns.Wait() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			for _, pair := range [][2]net.Conn{{in, out}, {out, in}} {
				conns.Go(func() {
					defer pair[0].Close()
					defer pair[1].Close()
					buf := make([]byte, 32<<10)
					for {
						n, err := pair[0].Read(buf)
						p.wait()
						if n > 0 {
							if _, werr := pair[1].Write(buf[:n]); werr != nil {
								return
							}
						}
						if err != nil {
							return
						}
					}
				})
			}
		}
	}()
	return p
}

func (p *stallProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
}

func (p *stallProxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
}

func (p *stallProxy) wait() {
	p.mu.Lock()
	f := p.frozen
	p.mu.Unlock()
	if f != nil {
		<-f
	}
}

// TestOwnershipGateSuspendsWhenChannelStalls: a listening connection that
// stops delivering without failing (a stalled network) is noticed by its
// heartbeat: the gates drop their cache within the bound, and cache again
// once the network flows.
func TestOwnershipGateSuspendsWhenChannelStalls(t *testing.T) {
	run := unique()
	prefix, table := "tw"+run+"_", "rt_"+run
	u, err := url.Parse(testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newStallProxy(t, u.Host)
	u.Host = proxy.addr
	one := newReplica(t, testsvc.PostgresURL(t), prefix, table)
	two := newReplica(t, u.String(), prefix, table)
	provision(t, one.c, tenancytest.TenantA)
	t.Cleanup(func() { teardown(t, one.c, tenancytest.TenantA) })
	if _, err := one.docs.Create(ctxA, "m1", item{}); err != nil {
		t.Fatal(err)
	}
	two.cached(t, ctxA, "m1")
	proxy.freeze()
	began := time.Now()
	for two.gate.Len() != 0 {
		if time.Since(began) > gateStaleBound+500*time.Millisecond {
			proxy.thaw()
			t.Fatalf("the gate kept its cache %v into a stalled channel", time.Since(began))
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("stalled channel: the gate dropped its cache %v after the stall began (bound %v)", time.Since(began), gateStaleBound)
	proxy.thaw()
	two.cached(t, ctxA, "m1")
}
