package modules_test

import (
	"context"
	"fmt"
	stdmaps "maps"
	"slices"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// killed is what a kill point panics with: the process ends there, and
// nothing the move would do after it (an unfence, a cleanup) runs.
type killed struct{ at string }

// process is one run of the app over kv and the store: a fresh Tenants,
// whose in-process state (fences, moves under way) a kill loses.
func process(t *testing.T, kv *kvPlaces, store *tenancytest.PlacedStore) *modules.Tenants {
	t.Helper()
	offer := modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}
	type core struct{}
	opts := []fx.Option{fx.NopLogger, fx.Provide(func() core { return core{} }),
		modules.LifecycleWith(modules.LifecycleConfig{
			Suspended: func(context.Context) ([]tenancy.ID, error) { return nil, nil },
			Placed:    store.Read, Refresh: 5 * time.Millisecond,
		})}
	for _, at := range offer.Tiers {
		opts = append(opts, modules.ProvideTenantState(func(core) modules.TenantState { return kv.killable(at, offer) }))
	}
	var tenants *modules.Tenants
	app := fx.New(append(opts, fx.Populate(&tenants))...)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return tenants
}

// killable is kv's state at a tier with kill points: provisioning,
// halfway through an import, and the export the check reads back.
func (k *kvPlaces) killable(at tenancy.Tier, offer modules.Offer) modules.TenantState {
	s := k.state(at, offer)
	provision, imp, exp := s.Provision, s.Import, s.Export
	s.Provision = func(ctx context.Context, id tenancy.ID) error {
		k.point("provision " + at.String())
		return provision(ctx, id)
	}
	s.Import = func(ctx context.Context, id tenancy.ID, in migrate.ArchiveIn) error {
		err := imp(ctx, id, in)
		if err == nil && len(k.data[at][id]) > 0 {
			// Cut off with half the records written.
			k.mu.Lock()
			half := map[string]string{}
			for i, key := range sortedKeys(k.data[at][id]) {
				if i%2 == 0 {
					half[key] = k.data[at][id][key]
				}
			}
			full := k.data[at][id]
			k.data[at][id] = half
			k.mu.Unlock()
			k.point("import " + at.String())
			k.mu.Lock()
			k.data[at][id] = full
			k.mu.Unlock()
		}
		return err
	}
	s.Export = func(ctx context.Context, id tenancy.ID, out migrate.ArchiveOut) error {
		k.point("export " + at.String())
		return exp(ctx, id, out)
	}
	return s
}

// point panics with killed when it is the kill point armed.
func (k *kvPlaces) point(name string) {
	k.mu.Lock()
	armed := k.kill
	k.mu.Unlock()
	if armed == name {
		k.mu.Lock()
		k.kill = ""
		k.mu.Unlock()
		panic(killed{name})
	}
}

// TestMoveKilledAtEveryCheckpointConverges: a move cut off at each of its
// checkpoints (after the fence is recorded, while provisioning, halfway
// through the copy, while verifying, after the switch is recorded, after
// the lift) and rerun in a new process ends where an uninterrupted move
// ends: the tenant at the new placement with every record, no fence left,
// the old copy whole, and no write lost or doubled.
func TestMoveKilledAtEveryCheckpointConverges(t *testing.T) {
	a := tenancytest.TenantA
	for _, kill := range []string{"record 1", "provision namespace", "import namespace", "export namespace", "record 2", "record 3"} {
		t.Run(kill, func(t *testing.T) {
			kv := &kvPlaces{data: map[tenancy.Tier]map[tenancy.ID]map[string]string{}}
			store := &tenancytest.PlacedStore{}
			ctx := context.Background()
			first := process(t, kv, store)
			if _, err := first.Provision(ctx, a); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for i := range 40 {
				want[fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
			}
			stdmaps.Copy(kv.data[tenancy.Tagged][a], want)

			records := 0
			record := func(ctx context.Context, p modules.Placed) error {
				if err := store.Write(ctx, p); err != nil {
					return err
				}
				records++
				kv.point(fmt.Sprintf("record %d", records))
				return nil
			}
			kv.mu.Lock()
			kv.kill = kill
			kv.mu.Unlock()
			var got any
			func() {
				defer func() { got = recover() }()
				_, err := first.Move(ctx, a, "kv", tenancy.Namespace, modules.MoveOptions{Record: record})
				t.Fatalf("the move ran to its end (%v) past the kill point %q", err, kill)
			}()
			if k, ok := got.(killed); !ok || k.at != kill {
				t.Fatalf("the move stopped with %v, want the kill at %q", got, kill)
			}

			// A new process reads the store: a fenced tenant is fenced there
			// too until the move ends.
			second := process(t, kv, store)
			if slices.Contains(store.Get(a).Moving, "kv") {
				placer := modules.NewPlacer("kv", "kv", modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}, second.Suspensions)
				if _, _, err := placer.At(tenancy.WithTenant(ctx, a), "keys", true); tenancy.CodeOf(err) != tenancy.CodeTenantMoving {
					t.Fatalf("a write in the new process while the store records the move: %v, want tenant_moving", err)
				}
			}
			records = 0
			if _, err := second.Move(ctx, a, "kv", tenancy.Namespace, modules.MoveOptions{Record: record}); err != nil {
				t.Fatalf("the rerun: %v", err)
			}
			p := second.Placement(a)
			if p.At["kv"] != tenancy.Namespace || len(p.Moving) != 0 {
				t.Fatalf("after the rerun: placed %v, moving %v", p.At, p.Moving)
			}
			if s := store.Get(a); s.At["kv"] != tenancy.Namespace || len(s.Moving) != 0 {
				t.Fatalf("the store after the rerun: placed %v, moving %v", s.At, s.Moving)
			}
			if !stdmaps.Equal(kv.data[tenancy.Namespace][a], want) || !stdmaps.Equal(kv.data[tenancy.Tagged][a], want) {
				t.Fatalf("records: new %d, old %d, want %d each", len(kv.data[tenancy.Namespace][a]), len(kv.data[tenancy.Tagged][a]), len(want))
			}
			if len(kv.data[tenancy.Dedicated][a]) != 0 {
				t.Fatal("a copy landed at a placement the move was not to")
			}
		})
	}
}
