package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// countingConn counts the writes a connection makes: pgx flushes once per
// round trip, so the count is the round trips.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// countedPool is a one-connection pool whose writes are counted.
func countedPool(t *testing.T) (*pgxpool.Pool, *atomic.Int64) {
	t.Helper()
	return countedPoolWith(t, nil)
}

// countedPoolWith is countedPool with its configuration adjusted by adjust.
func countedPoolWith(t *testing.T, adjust func(*pgxpool.Config)) (*pgxpool.Pool, *atomic.Int64) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testsvc.PostgresURL(t))
	must0(t, err)
	cfg.MaxConns = 1
	if adjust != nil {
		adjust(cfg)
	}
	writes := new(atomic.Int64)
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, writes}, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	must0(t, err)
	t.Cleanup(pool.Close)
	return pool, writes
}

func scaleTenant(i int) tenancy.ID {
	return tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1))
}

// TestNamespaceManyTenantsBounded: reading as more tenants than get
// prepared statements leaves the connection holding a bounded number of
// them, a read for a new tenant takes one round trip, and every operation
// of such a tenant still works.
func TestNamespaceManyTenantsBounded(t *testing.T) {
	const tenants = 48 // past the prepared budget, cheap to provision
	prefix := "tw" + unique() + "_"
	pool, writes := countedPool(t)
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Use(pool), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})), &d)
	ids := make([]tenancy.ID, tenants+1)
	for i := range ids {
		ids[i] = scaleTenant(i)
	}
	provision(t, c, ids...)
	t.Cleanup(func() { teardown(t, c, ids...) })
	for _, id := range ids[:tenants] {
		ctx := tenancy.WithTenant(context.Background(), id)
		for range 2 {
			if _, err := d.Get(ctx, "absent"); !errors.Is(err, document.ErrNotFound) {
				t.Fatalf("Get: %v", err)
			}
		}
	}
	var held int
	must0(t, pool.QueryRow(context.Background(), "SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements WHERE statement LIKE '%' || $1 || '%'",
		pgx.QueryExecModeSimpleProtocol, prefix).Scan(&held))
	if held > 32 {
		t.Errorf("after reading as %d tenants the connection holds %d prepared tenant statements, want at most 32", tenants, held)
	}

	// The first tenant is warm: its read is one round trip.
	ctx := tenancy.WithTenant(context.Background(), ids[0])
	before := writes.Load()
	if _, err := d.Get(ctx, "absent"); !errors.Is(err, document.ErrNotFound) {
		t.Fatal(err)
	}
	if n := writes.Load() - before; n != 1 {
		t.Errorf("a warm tenant's read took %d round trips, want 1", n)
	}

	// A new tenant past the budget: every operation, and its first read
	// in one round trip.
	ctx = tenancy.WithTenant(context.Background(), ids[tenants])
	_, err := d.Create(ctx, "k", item{Name: "new", N: 1})
	must0(t, err)
	before = writes.Load()
	rec, err := d.Get(ctx, "k")
	must0(t, err)
	if n := writes.Load() - before; n != 1 {
		t.Errorf("a new tenant's first read took %d round trips, want 1", n)
	}
	if rec.Value != (item{Name: "new", N: 1}) || rec.Version != 1 {
		t.Fatalf("Get = %+v", rec)
	}
	v, err := d.Update(ctx, "k", item{Name: "newer", N: 2}, 1)
	must0(t, err)
	if _, err := d.Update(ctx, "k", item{}, 1); !errors.Is(err, document.ErrConflict) {
		t.Fatalf("stale Update: %v", err)
	}
	if _, err := d.Update(ctx, "nope", item{}, 1); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("Update of a missing record: %v", err)
	}
	list, err := d.List(ctx, document.Query{Filters: []document.Filter{{Field: "n", Op: document.Eq, Value: 2}}})
	must0(t, err)
	if len(list) != 1 || list[0].Version != v || list[0].Value.Name != "newer" {
		t.Fatalf("List = %+v", list)
	}
	n, err := d.Count(ctx, document.Query{})
	must0(t, err)
	if n != 1 {
		t.Fatalf("Count = %d", n)
	}
	// Another tenant's record stays out of reach.
	if _, err := d.Get(tenancy.WithTenant(context.Background(), ids[0]), "k"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("Get as another tenant: %v", err)
	}
	must0(t, d.Delete(ctx, "k"))
	if _, err := d.Get(ctx, "k"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}
