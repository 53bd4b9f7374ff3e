package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// backendOf is the server backend the route's pool for tenant runs a
// statement on.
func backendOf(t *testing.T, c *postgres.Client, ctx context.Context, tenant tenancy.ID) int32 {
	t.Helper()
	pool, release, err := postgres.PoolFor(ctx, c, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var pid int32
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestPerTenantSchemasKeepATenantOnFewConnections: 600 tenants read in
// turn from one goroutine through a pool of 16. One pool hands every call
// the connection released last, which so caches all 600 tenants' tables
// (and RecycleAfter closes it again and again); split by tenant, each
// connection serves about a fifteenth of them, and each tenant one.
func TestPerTenantSchemasKeepATenantOnFewConnections(t *testing.T) {
	url := testsvc.PostgresURL(t) + "&pool_max_conns=16"
	c := start(t, postgres.Module("pg", postgres.Connect(url), postgres.SchemaPrefix("tw"+unique()+"_"),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})))
	tenants := migTenants(600)
	perBackend := map[int32]map[tenancy.ID]bool{}
	perTenant := map[tenancy.ID]map[int32]bool{}
	for range 3 {
		for _, id := range tenants {
			ctx := tenancy.WithTenant(context.Background(), id)
			pid := backendOf(t, c, ctx, id)
			if perBackend[pid] == nil {
				perBackend[pid] = map[tenancy.ID]bool{}
			}
			perBackend[pid][id] = true
			if perTenant[id] == nil {
				perTenant[id] = map[int32]bool{}
			}
			perTenant[id][pid] = true
		}
	}
	most := 0
	for _, ids := range perBackend {
		most = max(most, len(ids))
	}
	t.Logf("%d backends; the busiest served %d of %d tenants", len(perBackend), most, len(tenants))
	if most > 2*len(tenants)/15 {
		t.Errorf("a connection served %d of %d tenants: calls are not kept by tenant", most, len(tenants))
	}
	for id, pids := range perTenant {
		if len(pids) != 1 {
			t.Fatalf("tenant %v was served by %d connections from one goroutine", id, len(pids))
		}
	}
}

// TestPerTenantSchemasOneBusyTenantReachesEveryConnection: the split
// costs a busy tenant nothing: 15 concurrent calls of one tenant, each
// holding its connection, run on 15 different connections at once (the
// sixteenth is the first sub-pool's second, kept for the gate's
// listener).
func TestPerTenantSchemasOneBusyTenantReachesEveryConnection(t *testing.T) {
	url := testsvc.PostgresURL(t) + "&pool_max_conns=16"
	c := start(t, postgres.Module("pg", postgres.Connect(url), postgres.SchemaPrefix("tw"+unique()+"_"),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})))
	id := migTenants(1)[0]
	ctx := tenancy.WithTenant(context.Background(), id)
	var mu sync.Mutex
	pids := map[int32]bool{}
	var wg sync.WaitGroup
	ready := make(chan struct{})
	const calls = 15
	for range calls {
		wg.Go(func() {
			pool, release, err := postgres.PoolFor(ctx, c, id)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			conn, err := pool.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Release()
			mu.Lock()
			pids[int32(conn.Conn().PgConn().PID())] = true
			n := len(pids)
			mu.Unlock()
			if n == calls {
				close(ready)
			}
			select { // every call holds its connection until all are held
			case <-ready:
			case <-time.After(10 * time.Second):
				t.Errorf("only %d calls held a connection of their own after 10 s", n)
			}
		})
	}
	wg.Wait()
	if len(pids) != calls {
		t.Fatalf("%d concurrent calls of one tenant ran on %d connections", calls, len(pids))
	}
}
