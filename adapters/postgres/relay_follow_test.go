package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// liveSet is a tenant set the test changes while the app runs, as a
// registry would be when tenants are provisioned and offboarded.
type liveSet struct {
	mu  sync.Mutex
	ids []tenancy.ID
}

func (l *liveSet) tenants(context.Context) ([]tenancy.ID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids), nil
}

func (l *liveSet) set(ids ...tenancy.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = ids
}

// TestShardedRelayFollowsTheTenantSet: a sharded relay started with tenant
// A relays a tenant provisioned while it runs (C, its rows written under
// load from A) within its refresh delay, without a restart, each row once
// and under its own tenant; a tenant taken out of the set (A) stops being
// relayed, and what was written for it waits, undelivered, not lost.
func TestShardedRelayFollowsTheTenantSet(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("follow", followTheSet) // its app stops when the subtest ends, before the leak check
}

func followTheSet(t *testing.T) {
	run := unique()
	s := newSink()
	live := &liveSet{}
	live.set(tenancytest.TenantA)
	cfg := fast(s)
	cfg.Refresh = 100 * time.Millisecond
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"),
		postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("out")}),
		postgres.Relay("out", sharded(cfg, live.tenants))), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	startApp(t, app)

	// Load from A while C is provisioned and joins the set.
	stop := make(chan struct{})
	var load sync.WaitGroup
	var loadRows sync.Map
	load.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for ev, id := range fill(t, o, 1, tenancytest.TenantA) {
				loadRows.Store(ev, id)
			}
		}
	})
	provision(t, c, tenantC)
	rowsC := fill(t, o, 20, tenantC)
	joined := time.Now()
	live.set(tenancytest.TenantA, tenantC)
	s.waitAll(t, keys(rowsC), 10*time.Second)
	t.Logf("a tenant added to the set was relayed %s after it joined (refresh 100ms)", time.Since(joined).Round(time.Millisecond))
	close(stop)
	load.Wait()
	var aRows []string
	loadRows.Range(func(k, _ any) bool { aRows = append(aRows, k.(string)); return true })
	s.waitAll(t, aRows, 10*time.Second)

	// A leaves the set: its shard stops; what is written for it now waits.
	live.set(tenantC)
	time.Sleep(400 * time.Millisecond)
	late := fill(t, o, 3, tenancytest.TenantA)
	moreC := fill(t, o, 3, tenantC)
	s.waitAll(t, keys(moreC), 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ev := range late {
		if s.count[ev] != 0 {
			t.Errorf("%s of a tenant out of the set was relayed", ev)
		}
	}
	for _, rows := range []map[string]tenancy.ID{rowsC, moreC} {
		for ev, id := range rows {
			if s.count[ev] != 1 || s.where[ev] != id.String() {
				t.Errorf("%s: delivered %d times under %s", ev, s.count[ev], s.where[ev])
			}
		}
	}
	var pending int
	table := postgres.SchemaName("tw"+run+"_", tenancytest.TenantA) + ".out"
	if err := superuser(t).QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE delivered_at IS NULL").Scan(&pending); err != nil || pending != len(late) {
		t.Fatalf("%d rows of the tenant out of the set wait undelivered (%v), want %d", pending, err, len(late))
	}
}
