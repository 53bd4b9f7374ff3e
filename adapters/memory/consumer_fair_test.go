package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestConsumerFailingTenantDelaysNoOther: a sharded consumer whose
// handler fails for one tenant (its destination down) handles the other
// tenant's messages within twice their usual latency, and the failing
// tenant's once it is back, each once (tenancytest.Fair).
func TestConsumerFailingTenantDelaysNoOther(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	var mu sync.Mutex
	count := map[string]int{}
	down := false
	var st *memory.Stream
	app := fx.New(fx.NopLogger,
		memory.Module("shop", memory.StreamRoute("events", memory.StreamConfig{TenantAware: true, Stream: naming.Shared("events")}),
			memory.Consume(memory.ConsumerConfig{Name: "indexer", Stream: "events",
				WorkerConfig: shards.WorkerConfig{Backoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, OnError: func(error) {},
					Tenants: func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{a, b}, nil }},
				Handle: func(ctx context.Context, m memory.Message) error {
					id, _ := tenancy.FromContext(ctx)
					mu.Lock()
					defer mu.Unlock()
					if down && id == a {
						return errors.New("the tenant's index is down")
					}
					count[string(m.Payload)]++
					return nil
				}})),
		fx.Populate(&st))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	seq := 0
	add := func(id tenancy.ID, n int) ([]string, error) {
		var keys []string
		for range n {
			seq++
			k := fmt.Sprintf("m-%04d", seq)
			if _, err := st.Append(tenancy.WithTenant(context.Background(), id), []byte(k)); err != nil {
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
