package postgres_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestTenantShareKeepsAFloodingTenantOffThePool: on a shared pool of 8
// connections, tenant A runs 24 units of work at once, each holding its
// connection 40 ms. Without a share B's units queue behind A's for a
// connection; with modules.TenantShare (4 calls, 5 ms wait) A holds at
// most 4, its surplus is refused with tenant_share_exceeded, and B's
// units find a connection at once.
func TestTenantShareKeepsAFloodingTenantOffThePool(t *testing.T) {
	url := testsvc.PostgresURL(t) + "&pool_max_conns=8"
	run := func(share bool) (p50, p99 time.Duration, refused, served int64) {
		opts := []fx.Option{postgres.Module("pg", postgres.Connect(url),
			postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("docs_" + unique())})),
			modules.Lifecycle()}
		if share {
			opts = append(opts, modules.TenantShare("pg", modules.Share{Calls: 4, Wait: 5 * time.Millisecond}))
		}
		c := start(t, fx.Options(opts...))
		ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
		ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var other atomic.Value
		for range 24 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					err := c.InTx(ctxA, func(context.Context) error { time.Sleep(40 * time.Millisecond); return nil })
					switch tenancy.CodeOf(err) {
					case "":
						atomic.AddInt64(&served, 1)
					case tenancy.CodeTenantShareExceeded:
						atomic.AddInt64(&refused, 1)
						time.Sleep(time.Millisecond)
					default:
						other.Store(err)
					}
				}
			})
		}
		time.Sleep(100 * time.Millisecond) // A holds the pool
		var lat []time.Duration
		for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); {
			t0 := time.Now()
			if err := c.InTx(ctxB, func(context.Context) error { return nil }); err != nil {
				t.Fatalf("B's unit: %v", err)
			}
			lat = append(lat, time.Since(t0))
		}
		close(stop)
		wg.Wait()
		if err, _ := other.Load().(error); err != nil {
			t.Fatalf("A's unit failed otherwise than by its share: %v", err)
		}
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100], refused, served
	}
	free50, free99, freeRefused, _ := run(false)
	shared50, shared99, refused, served := run(true)
	t.Logf("B's unit of work while A floods the pool: without a share p50 %v p99 %v; with A's share of 4 p50 %v p99 %v (A: %d served, %d refused)",
		free50, free99, shared50, shared99, served, refused)
	if freeRefused != 0 {
		t.Fatalf("without a share %d of A's units were refused", freeRefused)
	}
	if free50 < 5*time.Millisecond {
		t.Fatalf("without a share B's median unit took %v: the flood did not hold the pool, so this test shows nothing", free50)
	}
	if shared50*4 > free50 || shared99 > free99 {
		t.Fatalf("with A's share B's units took p50 %v p99 %v, not clearly faster than without (p50 %v p99 %v)", shared50, shared99, free50, free99)
	}
	if refused == 0 || served == 0 {
		t.Fatalf("A: %d units served, %d refused by its share; want both", served, refused)
	}
}
