package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioF1PoolFlood is the fairness pair of a shared Redis pool: 49
// tenants each write then read a key every 10 ms on a tagged module whose
// client has 8 connections while, in every other phase, a 50th tenant
// runs 50 blocking stream reads at once (XREADGROUP BLOCK 5 ms on an
// empty stream: each holds its connection 5 ms, far more than 50x the
// others' rate). The module has a TenantShare of 2. Each round is the 49
// tenants' p99 call latency in a flood phase over their p99 in the quiet
// phase next to it. The flooding tenant's surplus is refused with
// tenant_share_exceeded, every call of the others succeeds, each tenant's
// last acknowledged write is there at the end, and no goroutine is left.
func TestRatioF1PoolFlood(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	e := newEnv(t)
	e.skipOnCluster(t, "the pair measures one server's pool of 8 connections")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := goredis.NewClient(&goredis.Options{Addr: testsvc.RedisAddr(t), PoolSize: 8})
	defer client.Close()
	cacheName, streamName := e.name("f1cache"), e.name("f1stream")
	var cache *redis.Cache
	var stream *redis.Stream
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("f1-"+e.suffix, redis.Use(client),
			redis.CacheRoute(cacheName, redis.RouteConfig{TenantAware: true}),
			redis.StreamRoute(streamName, redis.RouteConfig{TenantAware: true})),
		modules.TenantShare("f1-"+e.suffix, modules.Share{Calls: 2, Wait: 2 * time.Millisecond}),
		fx.Invoke(fx.Annotate(func(c *redis.Cache, s *redis.Stream) { cache, stream = c, s },
			fx.ParamTags(`name:"`+cacheName+`"`, `name:"`+streamName+`"`))))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	ids := tenants(50)
	ctxs := make([]context.Context, len(ids))
	for i, id := range ids {
		ctxs[i] = tenancy.WithTenant(context.Background(), id)
	}
	// acked[i] is tenant i's last acknowledged write; each tenant has one
	// writer, so its key must hold exactly that at the end.
	acked := make([]int, len(ids))
	var refused, served atomic.Int64
	phase := func(flood bool) []time.Duration {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var lat []time.Duration
		var failed atomic.Value
		for i := 1; i < len(ctxs); i++ {
			ctx := ctxs[i]
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					t0 := time.Now()
					if err := cache.Set(ctx, "n", []byte(strconv.Itoa(acked[i]+1)), 0); err != nil {
						failed.Store(err)
						return
					}
					acked[i]++
					t1 := time.Now()
					if _, _, err := cache.Get(ctx, "n"); err != nil {
						failed.Store(err)
						return
					}
					t2 := time.Now()
					mu.Lock()
					lat = append(lat, t1.Sub(t0), t2.Sub(t1))
					mu.Unlock()
				}
			})
		}
		if flood {
			for g := range 50 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						_, err := stream.ReadGroup(ctxs[0], "g", fmt.Sprint("c", g), 1, 5*time.Millisecond)
						if err != nil && tenancy.CodeOf(err) != tenancy.CodeTenantShareExceeded {
							failed.Store(err)
							return
						}
						if err != nil {
							refused.Add(1)
							time.Sleep(time.Millisecond)
						} else {
							served.Add(1)
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
	ratio.ReportRounds(t, "F1", "redis-pool-flood-p99", rounds, 1.5)
	t.Logf("%d rounds in %v; the flooding tenant: %d blocking reads served, %d refused", len(rounds), time.Since(begin), served.Load(), refused.Load())
	if refused.Load() == 0 || served.Load() == 0 {
		t.Fatalf("the flooding tenant had %d reads served and %d refused with tenant_share_exceeded; want both", served.Load(), refused.Load())
	}
	for i := 1; i < len(ctxs); i++ {
		v, ok, err := cache.Get(ctxs[i], "n")
		if err != nil {
			t.Fatal(err)
		}
		if want := strconv.Itoa(acked[i]); !ok || string(v) != want {
			t.Fatalf("tenant %s: key holds %q (found %v), its last acknowledged write was %s", ids[i], v, ok, want)
		}
	}
}
