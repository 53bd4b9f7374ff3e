package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"go.uber.org/fx"
)

// TestRatioF1PoolFlood is the fairness pair of a shared pool: 49 tenants
// read a document every 10 ms each while, in every other phase, a 50th
// tenant runs 50 units of work at once that each hold their connection
// 5 ms (slow statements at far more than 50x the others' rate). The pool
// has 8 connections and the module a TenantShare of 2. Each round is the
// 49 tenants' p99 read latency in a flood phase over their p99 in the
// quiet phase next to it; the flooding tenant's surplus is refused with
// tenant_share_exceeded, and every read of the others succeeds.
func TestRatioF1PoolFlood(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	var docs *postgres.Documents[item]
	table := "docs_" + unique()
	c := start(t, fx.Options(postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)+"&pool_max_conns=8"),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(table), Write: naming.Shared(table)})),
		modules.Lifecycle(), modules.TenantShare("pg", modules.Share{Calls: 2, Wait: 2 * time.Millisecond})), &docs)
	ids := migTenants(50)
	ctxs := make([]context.Context, len(ids))
	for i, id := range ids {
		ctxs[i] = tenancy.WithTenant(context.Background(), id)
	}
	provision(t, c, ids[0])
	for _, ctx := range ctxs[1:] {
		if _, err := docs.Create(ctx, "d", item{Name: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	phase := func(flood bool) []time.Duration {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var lat []time.Duration
		var failed atomic.Value
		for _, ctx := range ctxs[1:] {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					t0 := time.Now()
					if _, err := docs.Get(ctx, "d"); err != nil {
						failed.Store(err)
						return
					}
					d := time.Since(t0)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			})
		}
		if flood {
			for range 50 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						err := c.InTx(ctxs[0], func(context.Context) error { time.Sleep(5 * time.Millisecond); return nil })
						if err != nil && tenancy.CodeOf(err) != tenancy.CodeTenantShareExceeded {
							failed.Store(err)
							return
						}
						if err != nil {
							time.Sleep(time.Millisecond)
						}
					}
				})
			}
		}
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			t.Fatal(err)
		}
		return lat
	}
	begin := time.Now()
	rounds := ratio.P99Rounds(15, phase)
	ratio.ReportRounds(t, "F1", "pg-pool-flood-p99", rounds, 1.5)
	t.Logf("%d rounds in %v", len(rounds), time.Since(begin))
}
