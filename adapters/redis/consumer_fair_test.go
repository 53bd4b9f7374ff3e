package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestStreamConsumerFailingTenantDelaysNoOther: a sharded stream consumer
// whose handler fails for one tenant (its destination down) handles the
// other tenant's entries within twice their usual latency, and the failing
// tenant's once it is back (redelivered after ClaimAfter), each once
// (tenancytest.Fair).
func TestStreamConsumerFailingTenantDelaysNoOther(t *testing.T) {
	e := newEnv(t)
	a, b := tenancytest.TenantA, tenancytest.TenantB
	tc := channelTiers(e)[0]
	name := e.name("fair")
	var mu sync.Mutex
	count := map[string]int{}
	down := false
	handle := func(ctx context.Context, en redis.Entry) error {
		id, err := tenancy.Require(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if down && id == a {
			return errors.New("the tenant's index is down")
		}
		v, _ := en.Values["v"].(string)
		count[v]++
		return nil
	}
	var s *redis.Stream
	app := fx.New(fx.NopLogger,
		redis.Module("w", e.source(append(tc.with(redis.StreamRoute(name, tc.route)),
			redis.StreamConsumer(name, redis.ConsumerConfig{
				Group: "workers", Handle: handle, Block: 20 * time.Millisecond, ClaimAfter: 50 * time.Millisecond,
				WorkerConfig: shards.WorkerConfig{Backoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, OnError: func(error) {},
					Tenants: func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{a, b}, nil }},
			})))...),
		fx.Invoke(fx.Annotate(func(v *redis.Stream) { s = v }, fx.ParamTags(`name:"`+name+`"`))),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	seq := 0
	add := func(id tenancy.ID, n int) ([]string, error) {
		var keys []string
		for range n {
			seq++
			k := fmt.Sprintf("v-%04d", seq)
			if _, err := s.Append(tenancy.WithTenant(context.Background(), id), map[string]any{"v": k}); err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
		return keys, nil
	}
	tenancytest.Fair(t, tenancytest.Worker{
		Enqueue: func(_ context.Context, n int) ([]string, error) { return add(b, n) },
		Park: func(context.Context) ([]string, error) {
			mu.Lock()
			down = true
			mu.Unlock()
			return add(a, 10)
		},
		Restore:   func(context.Context) error { mu.Lock(); defer mu.Unlock(); down = false; return nil },
		Delivered: func(k string) int { mu.Lock(); defer mu.Unlock(); return count[k] },
	})
}
