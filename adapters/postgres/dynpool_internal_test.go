package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/internal/connprobe"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// testTenantPool is a tenantPool of max connections to the test server,
// with every connection it dials counted.
func testTenantPool(t *testing.T, max int) (*tenantPool, *connprobe.Counter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	var dialed connprobe.Counter
	cfg.ConnConfig.DialFunc = dialed.DialContext
	p := newTenantPool(cfg, max)
	t.Cleanup(p.close)
	return p, &dialed
}

var tenantC = tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")

func pid(t *testing.T, c *pgx.Conn) uint32 {
	t.Helper()
	if c.IsClosed() {
		t.Fatal("closed connection")
	}
	return c.PgConn().PID()
}

// TestTenantPoolMakesRoomLeastRecentlyUsed: a tenant reuses its own idle
// connection; a tenant with none, in a full pool, closes the least
// recently used idle connection of another tenant, and only that one.
func TestTenantPoolMakesRoomLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	p, dialed := testTenantPool(t, 2)
	use := func(tenant tenancy.ID) tenantConn {
		t.Helper()
		tc, err := p.acquire(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		p.release(ctx, tc, true)
		return tc
	}
	a := use(tenancytest.TenantA)
	b := use(tenancytest.TenantB)
	if a.conn == b.conn {
		t.Fatal("two tenants were given one connection")
	}
	if again := use(tenancytest.TenantA); again.conn != a.conn {
		t.Error("A did not reuse its own idle connection")
	}
	c := use(tenantC)
	if c.conn == a.conn || c.conn == b.conn {
		t.Fatal("C was given another tenant's connection")
	}
	if !b.conn.IsClosed() {
		t.Error("B's connection, the least recently used, was not the one closed")
	}
	if a.conn.IsClosed() {
		t.Error("A's connection was closed although B's was older")
	}
	if again := use(tenancytest.TenantA); again.conn != a.conn {
		t.Error("A lost its connection to C")
	}
	if n := dialed.Open(); n != 2 {
		t.Errorf("%d connections open, want 2", n)
	}
}

// TestTenantPoolBound: under concurrent reads of several tenants the pool
// never holds more than max connections (counting those still closing),
// and no connection ever serves two tenants.
func TestTenantPoolBound(t *testing.T) {
	const max = 3
	p, dialed := testTenantPool(t, max)
	tenants := []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenantC, tenancy.MustParseID("0d0d0d0d-0000-4000-8000-00000000000d")}
	var (
		mu    sync.Mutex
		owner = map[*pgx.Conn]tenancy.ID{}
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 40 {
				tenant := tenants[r.IntN(len(tenants))]
				tc, err := p.acquire(ctx, tenant)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, seen := owner[tc.conn]; seen && prev != tenant {
					t.Errorf("a connection of %v was given to %v", prev, tenant)
				}
				owner[tc.conn] = tenant
				mu.Unlock()
				if _, err := tc.conn.Exec(ctx, "SELECT 1"); err != nil {
					t.Error(err)
				}
				p.release(ctx, tc, r.IntN(10) != 0)
			}
		})
	}
	wg.Wait()
	if peak := dialed.Peak(); peak > max || peak < 2 {
		t.Errorf("peak of %d connections, want 2 to %d", peak, max)
	}
	p.close()
	if n := dialed.Open(); n != 0 {
		t.Errorf("%d connections open after close", n)
	}
}

// TestTenantPoolWaits: in a full pool with nothing idle a read waits,
// bounded by its context, and gets a connection once one is released.
func TestTenantPoolWaits(t *testing.T) {
	ctx := context.Background()
	p, _ := testTenantPool(t, 1)
	a, err := p.acquire(ctx, tenancytest.TenantA)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := p.acquire(short, tenancytest.TenantB); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read past the bound did not wait for its context: %v", err)
	}
	got := make(chan tenantConn)
	go func() {
		b, err := p.acquire(ctx, tenancytest.TenantB)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	time.Sleep(50 * time.Millisecond)
	p.release(ctx, a, true)
	select {
	case b := <-got:
		if b.conn == a.conn || !a.conn.IsClosed() {
			t.Error("B was given A's connection, or A's stayed open beside B's")
		}
		p.release(ctx, b, true)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting read was not woken by the release")
	}
}

// TestTenantPoolReplacesDeadConnection: an idle connection the server
// dropped is pinged before use and replaced, not handed out.
func TestTenantPoolReplacesDeadConnection(t *testing.T) {
	ctx := context.Background()
	p, _ := testTenantPool(t, 1)
	a, err := p.acquire(ctx, tenancytest.TenantA)
	if err != nil {
		t.Fatal(err)
	}
	dead := pid(t, a.conn)
	p.release(ctx, a, true)
	su, err := pgx.Connect(ctx, testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	if _, err := su.Exec(ctx, "SELECT pg_terminate_backend($1)", dead); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pingIdle + 100*time.Millisecond)
	again, err := p.acquire(ctx, tenancytest.TenantA)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release(ctx, again, true)
	if _, err := again.conn.Exec(ctx, "SELECT 1"); err != nil || again.conn.PgConn().PID() == dead {
		t.Errorf("the dropped connection was handed out: %v", err)
	}
}
