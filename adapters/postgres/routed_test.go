package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRoutedEvictReResolves: after Evict, a tenant's next call resolves
// its credentials again and runs on its new database, on every later
// call; its old database is then free for another tenant, and it cannot
// move onto a database another tenant uses.
func TestRoutedEvictReResolves(t *testing.T) {
	_, dsns := databases(t, 3, "")
	var moved atomic.Bool
	resolve := func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		switch {
		case tn == tenancytest.TenantA && moved.Load():
			return routing.Credentials{Endpoint: dsns[2]}, nil
		case tn == tenancytest.TenantA:
			return routing.Credentials{Endpoint: dsns[0]}, nil
		case tn == tenancytest.TenantB:
			return routing.Credentials{Endpoint: dsns[1]}, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", tn)
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 1}}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := d.Create(ctxA, "a1", item{}); err != nil {
		t.Fatal(err)
	}
	moved.Store(true)
	if _, err := d.Get(ctxA, "a1"); err != nil {
		t.Fatalf("before eviction the binding holds: %v", err)
	}
	c.Evict(tenancytest.TenantA)
	provision(t, c, tenancytest.TenantA)
	for range 3 {
		if _, err := d.Get(ctxA, "a1"); !errors.Is(err, document.ErrNotFound) {
			t.Fatalf("after eviction A should run on the new database: %v", err)
		}
	}
}

// TestCallerPoolSurvivesStop: a pool passed with Pool belongs to the caller.
func TestCallerPoolSurvivesStop(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	t.Run("app", func(t *testing.T) {
		var k *postgres.Counter
		c := start(t, postgres.Module("pg", postgres.Use(pool),
			postgres.CounterRoute("c", postgres.CounterConfig{TenantAware: true, Table: naming.Shared("cnt_" + unique())})), named("c", &k))
		provision(t, c, tenancytest.TenantA)
		if _, err := k.Add(tenancy.WithTenant(context.Background(), tenancytest.TenantA), "x", 1); err != nil {
			t.Fatal(err)
		}
	})
	if err := pool.Ping(context.Background()); err != nil {
		t.Errorf("the module closed the caller's pool: %v", err)
	}
}
