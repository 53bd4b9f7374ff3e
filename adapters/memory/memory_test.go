package memory_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type order struct {
	Item  string `json:"item"`
	Qty   int    `json:"qty"`
	Owner string `json:"owner"`
}

// build wires one memory module and extracts its routes.
func build(t *testing.T, opts ...memory.Option) (docs *memory.Documents[order], kv *memory.Cache, st *memory.Stream) {
	t.Helper()
	docs, kv, st, _ = buildSuspendable(t, opts...)
	return docs, kv, st
}

// buildSuspendable is build, with the suspended set the app's routes check.
func buildSuspendable(t *testing.T, opts ...memory.Option) (docs *memory.Documents[order], kv *memory.Cache, st *memory.Stream, susp *modules.Suspensions) {
	t.Helper()
	susp = &modules.Suspensions{}
	app := fx.New(fx.NopLogger, fx.Supply(susp), memory.Module("shop", opts...),
		fx.Invoke(func(p struct {
			fx.In
			Docs  *memory.Documents[order] `optional:"true"`
			Cache *memory.Cache            `optional:"true"`
			St    *memory.Stream           `optional:"true"`
		}) {
			docs, kv, st = p.Docs, p.Cache, p.St
		}))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return docs, kv, st, susp
}

var tiers = []struct {
	name      string
	aware     bool
	container naming.Name
}{
	{"tagged", true, naming.Shared("orders")},
	{"namespace", false, naming.PerTenant("orders")},
	{"namespace+tagged", true, naming.PerTenant("orders")},
}

func documentProbe(docs *memory.Documents[order]) tenancytest.Probe {
	const id = "order-1"
	return tenancytest.Probe{
		RecordID: id,
		Write: func(ctx context.Context) error {
			_, err := docs.Create(ctx, id, order{Item: "probe", Qty: 1})
			return err
		},
		Read: func(ctx context.Context) (bool, error) {
			_, err := docs.Get(ctx, id)
			if errors.Is(err, document.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			rec, err := docs.Get(ctx, id)
			return err == nil && rec.Value.Qty == 1 && rec.Version == 1, err
		},
		List: func(ctx context.Context) ([]string, error) {
			recs, err := docs.List(ctx, document.Query{})
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ID)
			}
			return ids, err
		},
		Count: func(ctx context.Context) (int, error) {
			return docs.Count(ctx, document.Query{Filters: []document.Filter{{Field: "item", Op: document.Eq, Value: "probe"}}})
		},
		Update: func(ctx context.Context) error {
			_, err := docs.Update(ctx, id, order{Item: "stolen", Qty: 99}, 1)
			return err
		},
		Delete: func(ctx context.Context) error { return docs.Delete(ctx, id) },
	}
}

func TestDocumentBoundary(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			docs, _, _ := build(t, memory.Document[order]("orders", memory.DocumentConfig{TenantAware: tier.aware, Read: tier.container}))
			tenancytest.Boundary(t, documentProbe(docs))
		})
	}
}

func TestCacheBoundary(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			_, kv, _ := build(t, memory.CacheRoute("sessions", memory.CacheConfig{TenantAware: tier.aware, Keys: tier.container}))
			tenancytest.Boundary(t, tenancytest.Probe{
				Write: func(ctx context.Context) error { return kv.Set(ctx, "k", []byte("a"), 0) },
				Read: func(ctx context.Context) (bool, error) {
					_, ok, err := kv.Get(ctx, "k")
					return ok, err
				},
				Intact: func(ctx context.Context) (bool, error) {
					v, ok, err := kv.Get(ctx, "k")
					return ok && string(v) == "a", err
				},
				Delete: func(ctx context.Context) error {
					if ok, err := kv.Delete(ctx, "k"); err != nil || !ok {
						return errors.Join(err, document.ErrNotFound)
					}
					return nil
				},
			})
		})
	}
}

func TestStreamBoundary(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			_, _, st := build(t, memory.StreamRoute("events", memory.StreamConfig{TenantAware: tier.aware, Stream: tier.container}))
			tenancytest.Boundary(t, tenancytest.Probe{
				Write: func(ctx context.Context) error { _, err := st.Append(ctx, []byte("probe")); return err },
				Read: func(ctx context.Context) (bool, error) {
					msgs, err := st.Read(ctx, 0, 0)
					return len(msgs) > 0, err
				},
			})
		})
	}
}

// TestParity: the same operations with tenancy off, and with
// tenancy on and only the default tenant bound, give identical results.
func TestParity(t *testing.T) {
	run := func(aware bool, ctx context.Context) []string {
		docs, _, _ := build(t, memory.Document[order]("orders", memory.DocumentConfig{TenantAware: aware, Read: naming.Shared("orders")}))
		var log []string
		for i := range 5 {
			_, err := docs.Create(ctx, fmt.Sprintf("o%d", i), order{Item: "x", Qty: i})
			log = append(log, fmt.Sprint(err))
		}
		_, err := docs.Update(ctx, "o1", order{Item: "y", Qty: 10}, 1)
		log = append(log, fmt.Sprint(err))
		_, err = docs.Update(ctx, "o1", order{Item: "y", Qty: 11}, 1)
		log = append(log, fmt.Sprint(err))
		log = append(log, fmt.Sprint(docs.Delete(ctx, "o2")), fmt.Sprint(docs.Delete(ctx, "o2")))
		recs, err := docs.List(ctx, document.Query{OrderBy: "qty", Desc: true, Limit: 3, Filters: []document.Filter{{Field: "qty", Op: document.Gte, Value: 1}}})
		for _, r := range recs {
			log = append(log, fmt.Sprintf("%s:%d:%d", r.ID, r.Version, r.Value.Qty))
		}
		return append(log, fmt.Sprint(err))
	}
	off := run(false, context.Background())
	on := run(true, tenancy.WithTenant(context.Background(), tenancy.Default))
	if !slices.Equal(off, on) {
		t.Fatalf("tenancy off: %v\ntenancy on, default tenant: %v", off, on)
	}
	if !slices.Contains(off, "o1:2:10") || !slices.Contains(off, fmt.Sprint(document.ErrConflict)) {
		t.Fatalf("parity run did not exercise update and conflict: %v", off)
	}
}

func TestFailClosed(t *testing.T) {
	for _, tier := range tiers {
		docs, kv, st := build(t,
			memory.Document[order]("orders", memory.DocumentConfig{TenantAware: tier.aware, Read: tier.container}),
			memory.CacheRoute("c", memory.CacheConfig{TenantAware: tier.aware, Keys: tier.container}),
			memory.StreamRoute("s", memory.StreamConfig{TenantAware: tier.aware, Stream: tier.container}))
		for _, ctx := range []context.Context{context.Background(), tenancy.WithGlobal(context.Background())} {
			_, err1 := docs.Create(ctx, "x", order{})
			_, err2 := docs.List(ctx, document.Query{})
			err3 := kv.Set(ctx, "k", nil, 0)
			_, err4 := st.Append(ctx, nil)
			for i, err := range []error{err1, err2, err3, err4} {
				t.Logf("%s op %d", tier.name, i)
				tenancytest.RequireUnbound(t, err, "shop", "memory", []string{"orders", "orders", "c", "s"}[i])
			}
		}
	}
}

func TestWiring(t *testing.T) {
	static := memory.Document[order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")})
	tenancytest.RequireWires(t, memory.Module("shop", modules.RequiredIsolation(tenancy.Tagged), static))
	e := tenancytest.RequireRefused(t, "memory_tenancy_validation_failed",
		memory.Module("shop", modules.RequiredIsolation(tenancy.Namespace), static))
	if e.Route != "orders" || e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace {
		t.Fatalf("refusal fields: %+v", e)
	}
	// Per-tenant read with a static write still reaches only tagged.
	tenancytest.RequireRefused(t, "memory_tenancy_validation_failed", memory.Module("shop",
		modules.RequiredIsolation(tenancy.Namespace),
		memory.Document[order]("orders", memory.DocumentConfig{Read: naming.PerTenant("orders"), Write: naming.Shared("orders")})))
	mismatch := tenancytest.RequireRefused(t, "memory_tenancy_validation_failed",
		memory.Module("shop", modules.RequiredIsolation(tenancy.Dedicated), static))
	if !errors.Is(mismatch, tenancy.ErrCapabilityMismatch) {
		t.Fatalf("dedicated floor on memory is not a capability mismatch: %v", mismatch)
	}
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		memory.Module("shop", memory.CacheRoute("c", memory.CacheConfig{Keys: naming.Shared("bad.name")})))
}

func TestConsumers(t *testing.T) {
	stream := memory.StreamRoute("events", memory.StreamConfig{TenantAware: true, Stream: naming.Shared("events")})
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, memory.Module("shop", stream,
		memory.Consume(memory.ConsumerConfig{Name: "indexer", Stream: "events", Handle: func(context.Context, memory.Message) error { return nil }})))

	var mu sync.Mutex
	seen := map[tenancy.ID][]string{}
	done := make(chan struct{}, 4)
	var st *memory.Stream
	app := fx.New(fx.NopLogger,
		memory.Module("shop", stream, memory.Consume(memory.ConsumerConfig{
			Name: "indexer", Stream: "events",
			WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) {
				return []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB}, nil
			}},
			Handle: func(ctx context.Context, m memory.Message) error {
				id, err := tenancy.Require(ctx)
				if err != nil {
					return err
				}
				mu.Lock()
				seen[id] = append(seen[id], string(m.Payload))
				mu.Unlock()
				done <- struct{}{}
				return nil
			},
		})),
		fx.Populate(&st))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	for _, w := range []struct {
		id  tenancy.ID
		msg string
	}{{tenancytest.TenantA, "a1"}, {tenancytest.TenantB, "b1"}, {tenancytest.TenantA, "a2"}} {
		if _, err := st.Append(tenancy.WithTenant(context.Background(), w.id), []byte(w.msg)); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("consumer did not deliver")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen[tenancytest.TenantA], []string{"a1", "a2"}) || !slices.Equal(seen[tenancytest.TenantB], []string{"b1"}) {
		t.Fatalf("each tenant's reader must see exactly its own messages: %v", seen)
	}
}

func TestTwoModulesInOneApp(t *testing.T) {
	var kv *memory.Cache
	var st *memory.Stream
	app := fx.New(fx.NopLogger,
		memory.Module("a", memory.CacheRoute("c", memory.CacheConfig{Keys: naming.PerTenant("c")})),
		memory.Module("b", memory.StreamRoute("s", memory.StreamConfig{Stream: naming.PerTenant("s")})),
		fx.Populate(&kv, &st))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if err := kv.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, []byte("m")); err != nil {
		t.Fatal(err)
	}
}

func TestCacheTTL(t *testing.T) {
	_, kv, _ := build(t, memory.CacheRoute("c", memory.CacheConfig{Keys: naming.Shared("c")}))
	ctx := context.Background()
	if err := kv.Set(ctx, "short", []byte("v"), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := kv.Set(ctx, "long", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := kv.Get(ctx, "short"); !ok {
		t.Fatal("entry missing before its TTL")
	}
	time.Sleep(40 * time.Millisecond)
	if _, ok, _ := kv.Get(ctx, "short"); ok {
		t.Fatal("entry outlived its TTL")
	}
	if _, ok, _ := kv.Get(ctx, "long"); !ok {
		t.Fatal("entry without TTL expired")
	}
}
