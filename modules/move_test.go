package modules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// kvPlaces is a stand-in module with a placement per tier, each an
// in-memory map of each tenant's records, which export and import.
type kvPlaces struct {
	mu   sync.Mutex
	data map[tenancy.Tier]map[tenancy.ID]map[string]string
	// drop, when set, makes imports lose the record of that key.
	drop string
	// kill is the kill point armed (move_kill_test.go), "" for none.
	kill string
	// straggle, when set, runs once an import has written its records,
	// with mu held: a write of another replica landing then.
	straggle func()
	// exported, when set, runs before each export, without mu held.
	exported func(at tenancy.Tier)
}

func (k *kvPlaces) state(at tenancy.Tier, offer modules.Offer) modules.TenantState {
	of := func(id tenancy.ID) map[string]string {
		if k.data[at] == nil {
			k.data[at] = map[tenancy.ID]map[string]string{}
		}
		if k.data[at][id] == nil {
			k.data[at][id] = map[string]string{}
		}
		return k.data[at][id]
	}
	return modules.TenantState{Module: "kv." + at.String(), Backend: "kv", Placement: &modules.Placement{Module: "kv", At: at, Offer: offer},
		Provision: func(_ context.Context, id tenancy.ID) error { k.mu.Lock(); defer k.mu.Unlock(); of(id); return nil },
		Offboard: func(_ context.Context, id tenancy.ID) error {
			k.mu.Lock()
			defer k.mu.Unlock()
			delete(k.data[at], id)
			return nil
		},
		Verify: func(_ context.Context, id tenancy.ID) (modules.Erasure, error) {
			k.mu.Lock()
			defer k.mu.Unlock()
			e := modules.Erasure{Checked: []modules.Family{{Name: "keys"}}}
			if n := len(k.data[at][id]); n > 0 {
				e.Left = []modules.Leftover{{Family: modules.Family{Name: "keys"}, Count: int64(n)}}
			}
			return e, nil
		},
		Export: func(_ context.Context, id tenancy.ID, out migrate.ArchiveOut) error {
			if k.exported != nil {
				k.exported(at)
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			for _, key := range sortedKeys(of(id)) {
				v, _ := json.Marshal(of(id)[key])
				if err := out.Emit(migrate.Record{Route: "keys", Kind: "key", Key: key, Value: v}); err != nil {
					return err
				}
			}
			return nil
		},
		Import: func(_ context.Context, id tenancy.ID, in migrate.ArchiveIn) error {
			k.mu.Lock()
			defer k.mu.Unlock()
			if len(of(id)) > 0 {
				return migrate.ArchiveTargetNotEmpty("kv."+at.String(), "kv", id, "keys")
			}
			for r, err := range migrate.RecordsOf(in) {
				if err != nil {
					return err
				}
				var v string
				_ = json.Unmarshal(r.Value, &v)
				if r.Key != k.drop {
					of(id)[r.Key] = v
				}
			}
			if k.straggle != nil {
				k.straggle()
			}
			return nil
		},
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func kvApp(t *testing.T) (*modules.Tenants, *kvPlaces) {
	t.Helper()
	offer := modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}
	kv := &kvPlaces{data: map[tenancy.Tier]map[tenancy.ID]map[string]string{}}
	type core struct{}
	opts := []fx.Option{fx.NopLogger, modules.Lifecycle(), fx.Provide(func() core { return core{} })}
	for _, at := range offer.Tiers {
		opts = append(opts, modules.ProvideTenantState(func(core) modules.TenantState { return kv.state(at, offer) }))
	}
	var tenants *modules.Tenants
	if err := fx.New(append(opts, fx.Populate(&tenants))...).Err(); err != nil {
		t.Fatal(err)
	}
	return tenants, kv
}

// TestMoveCopiesVerifiesAndSwitches: a move copies every record, switches
// the placement, keeps the old copy until CleanupMove (which refuses the
// current placement and erases the old one), and converges when rerun.
func TestMoveCopiesVerifiesAndSwitches(t *testing.T) {
	tenants, kv := kvApp(t)
	ctx, a := context.Background(), tenancytest.TenantA
	if _, err := tenants.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		kv.data[tenancy.Tagged][a][fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
	}
	rep, err := tenants.Move(ctx, a, "kv", tenancy.Namespace, modules.MoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 50 || rep.From != tenancy.Tagged || len(rep.Steps) != 6 {
		t.Fatalf("report: %+v", rep)
	}
	if got := tenants.Placement(a).At["kv"]; got != tenancy.Namespace {
		t.Fatalf("placed at %v after the move", got)
	}
	if len(kv.data[tenancy.Namespace][a]) != 50 || len(kv.data[tenancy.Tagged][a]) != 50 {
		t.Fatalf("copies: new %d, old %d records", len(kv.data[tenancy.Namespace][a]), len(kv.data[tenancy.Tagged][a]))
	}
	// A rerun once there does nothing more.
	if rep, err := tenants.Move(ctx, a, "kv", tenancy.Namespace, modules.MoveOptions{}); err != nil || rep.Records != 0 {
		t.Fatalf("rerun: %v %+v", err, rep)
	}
	_, err = tenants.CleanupMove(ctx, a, "kv", tenancy.Namespace)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMoveRefused, "kv", "kv", "")
	if _, err := tenants.CleanupMove(ctx, a, "kv", tenancy.Tagged); err != nil {
		t.Fatal(err)
	}
	if len(kv.data[tenancy.Tagged][a]) != 0 {
		t.Fatal("the old copy survived its cleanup")
	}
	// Back to tagged, where a stale copy would make the import refuse:
	// the copy is redone over it.
	kv.data[tenancy.Tagged][a] = map[string]string{"stale": "x"}
	if _, err := tenants.Move(ctx, a, "kv", tenancy.Tagged, modules.MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, stale := kv.data[tenancy.Tagged][a]["stale"]; stale || len(kv.data[tenancy.Tagged][a]) != 50 {
		t.Fatalf("tagged copy after the move back: %d records, stale %v", len(kv.data[tenancy.Tagged][a]), stale)
	}
}

// TestMoveUnverifiedStays: a copy that loses a record fails the check,
// and so does a source written to behind the copy; the copy is removed
// and the tenant stays, nothing lost; a move is
// refused for a suspended tenant, a tier not offered or under the plan.
func TestMoveUnverifiedStays(t *testing.T) {
	tenants, kv := kvApp(t)
	ctx, a := context.Background(), tenancytest.TenantA
	if _, err := tenants.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		kv.data[tenancy.Tagged][a][fmt.Sprint("k", i)] = "v"
	}
	kv.drop = "k3"
	_, err := tenants.Move(ctx, a, "kv", tenancy.Dedicated, modules.MoveOptions{})
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMoveUnverified, "kv", "kv.dedicated", "")
	if at := tenants.Placement(a).At["kv"]; at != tenancy.None || len(kv.data[tenancy.Tagged][a]) != 5 || len(kv.data[tenancy.Dedicated][a]) != 0 {
		t.Fatalf("after a failed check: placed %v, old %d records, copy %d", at, len(kv.data[tenancy.Tagged][a]), len(kv.data[tenancy.Dedicated][a]))
	}
	kv.drop = ""

	// A write another replica admitted before it read the fence, landing
	// in the source once the copy has read it: the check reads the source
	// again, and the tenant stays there, with the write.
	kv.straggle = func() { kv.data[tenancy.Tagged][a]["late"] = "v"; kv.straggle = nil }
	_, err = tenants.Move(ctx, a, "kv", tenancy.Dedicated, modules.MoveOptions{})
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMoveUnverified, "kv", "kv.tagged", "")
	if at := tenants.Placement(a).At["kv"]; at != tenancy.None || len(kv.data[tenancy.Tagged][a]) != 6 || len(kv.data[tenancy.Dedicated][a]) != 0 {
		t.Fatalf("after a write behind the copy: placed %v, old %d records, copy %d", at, len(kv.data[tenancy.Tagged][a]), len(kv.data[tenancy.Dedicated][a]))
	}
	if _, err := tenants.Move(ctx, a, "kv", tenancy.Dedicated, modules.MoveOptions{}); err != nil {
		t.Fatalf("the move again, the write ended: %v", err)
	}
	if len(kv.data[tenancy.Dedicated][a]) != 6 {
		t.Fatalf("the copy holds %d records, want 6", len(kv.data[tenancy.Dedicated][a]))
	}
	if _, err := tenants.Move(ctx, a, "kv", tenancy.Tagged, modules.MoveOptions{}); err != nil {
		t.Fatal(err)
	}

	tenants.SetPlan(a, tenancy.Namespace)
	_, err = tenants.Move(ctx, a, "kv", tenancy.Tagged, modules.MoveOptions{})
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementUnderFloor, "kv", "kv", "")
	_, err = tenants.Move(ctx, a, "kv", tenancy.None, modules.MoveOptions{})
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementInvalid, "kv", "kv", "")
	_, err = tenants.Move(ctx, a, "nokv", tenancy.Namespace, modules.MoveOptions{})
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementInvalid, "", "nokv", "")
	tenants.Suspend(a)
	_, err = tenants.Move(ctx, a, "kv", tenancy.Namespace, modules.MoveOptions{})
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMoveRefused, "kv", "kv", "")
	_, err = tenants.Move(ctx, a, "kv", tenancy.Namespace, modules.MoveOptions{DryRun: true})
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMoveRefused, "kv", "kv", "")
	tenants.Resume(a)
	rep, err := tenants.Move(ctx, a, "kv", tenancy.Namespace, modules.MoveOptions{DryRun: true})
	if err != nil || len(rep.Steps) != 6 || len(kv.data[tenancy.Namespace][a]) != 0 {
		t.Fatalf("dry run: %v, %d steps, %d records copied", err, len(rep.Steps), len(kv.data[tenancy.Namespace][a]))
	}
}

// TestMovePanicInTheCheckReachesTheCaller: the check reads the source in
// a goroutine of its own; a panic there (a driver's, a kill) reaches the
// goroutine that called Move, where its recover sees it, instead of
// ending the process.
func TestMovePanicInTheCheckReachesTheCaller(t *testing.T) {
	tenants, kv := kvApp(t)
	ctx, a := context.Background(), tenancytest.TenantA
	if _, err := tenants.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	kv.data[tenancy.Tagged][a]["k"] = "v"
	type boom struct{}
	var sourceReads atomic.Int32
	kv.exported = func(at tenancy.Tier) {
		if at == tenancy.Tagged && sourceReads.Add(1) == 2 { // the copy's read, then the check's
			panic(boom{})
		}
	}
	got := func() (r any) {
		defer func() { r = recover() }()
		_, err := tenants.Move(ctx, a, "kv", tenancy.Dedicated, modules.MoveOptions{})
		t.Fatalf("the move returned (%v) past a panic in its check", err)
		return nil
	}()
	if _, ok := got.(boom); !ok {
		t.Fatalf("Move's caller recovered %v, want the check's panic", got)
	}
}

// TestMoveFencesWrites: while a move holds its fence, a placed write is
// refused with tenant_moving and a read is served; the fence waits for a
// write admitted before it.
func TestMoveFencesWrites(t *testing.T) {
	tenants, _ := kvApp(t)
	offer := modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}
	placer := modules.NewPlacer("kv", "kv", offer, tenants.Suspensions)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := tenants.Provision(context.Background(), tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	// A write admitted before the move: the move's fence must wait for it.
	_, end, err := placer.At(ctx, "keys", true)
	if err != nil {
		t.Fatal(err)
	}
	moved := make(chan error, 1)
	go func() {
		_, err := tenants.Move(context.Background(), tenancytest.TenantA, "kv", tenancy.Namespace, modules.MoveOptions{Record: func(context.Context, modules.Placed) error { return nil }})
		moved <- err
	}()
	// Until the admitted write ends, the move waits; meanwhile new writes
	// are refused and reads are served.
	// Each write admitted before the fence ends at once, as a real one
	// would, so only the first one holds the move.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, endWrite, err := placer.At(ctx, "keys", true)
		if err != nil {
			_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMoving, "kv", "kv", "keys")
			break
		}
		endWrite()
		select {
		case err := <-moved:
			t.Fatalf("the move ended (%v) before it fenced a write", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the move never fenced writes")
		}
		runtime.Gosched()
	}
	if at, _, err := placer.At(ctx, "keys", false); err != nil || at != tenancy.Tagged {
		t.Fatalf("a read under the fence: %v at %v", err, at)
	}
	select {
	case err := <-moved:
		t.Fatalf("the move ended (%v) while a write admitted before it was in flight", err)
	default:
	}
	end()
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	if at, end, err := placer.At(ctx, "keys", true); err != nil || at != tenancy.Namespace {
		t.Fatalf("a write after the move: %v at %v", err, at)
	} else {
		end()
	}
}
