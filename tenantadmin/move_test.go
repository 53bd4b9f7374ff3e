package tenantadmin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantadmin"
)

// placedKV is a stand-in module with a tagged and a namespace placement,
// each a map of each tenant's records.
func placedKV() (fx.Option, func(tenancy.Tier, tenancy.ID) map[string]string) {
	offer := modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}
	var mu sync.Mutex
	data := map[tenancy.Tier]map[tenancy.ID]map[string]string{}
	of := func(at tenancy.Tier, id tenancy.ID) map[string]string {
		if data[at] == nil {
			data[at] = map[tenancy.ID]map[string]string{}
		}
		if data[at][id] == nil {
			data[at][id] = map[string]string{}
		}
		return data[at][id]
	}
	type core struct{}
	opts := []fx.Option{fx.Provide(func() core { return core{} })}
	for _, at := range offer.Tiers {
		opts = append(opts, modules.ProvideTenantState(func(core) modules.TenantState {
			return modules.TenantState{Module: "kv." + at.String(), Backend: "kv", Placement: &modules.Placement{Module: "kv", At: at, Offer: offer},
				Provision: func(_ context.Context, id tenancy.ID) error { mu.Lock(); defer mu.Unlock(); of(at, id); return nil },
				Offboard: func(_ context.Context, id tenancy.ID) error {
					mu.Lock()
					defer mu.Unlock()
					delete(data[at], id)
					return nil
				},
				Export: func(_ context.Context, id tenancy.ID, out migrate.ArchiveOut) error {
					mu.Lock()
					defer mu.Unlock()
					for k, v := range of(at, id) {
						b, _ := json.Marshal(v)
						if err := out.Emit(migrate.Record{Route: "keys", Kind: "key", Key: k, Value: b}); err != nil {
							return err
						}
					}
					return nil
				},
				Import: func(_ context.Context, id tenancy.ID, in migrate.ArchiveIn) error {
					mu.Lock()
					defer mu.Unlock()
					for r, err := range migrate.RecordsOf(in) {
						if err != nil {
							return err
						}
						var v string
						_ = json.Unmarshal(r.Value, &v)
						of(at, id)[r.Key] = v
					}
					return nil
				}}
		}))
	}
	return fx.Options(opts...), func(at tenancy.Tier, id tenancy.ID) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return of(at, id)
	}
}

// TestMoveEndpoint: POST /tenants/{id}/move lists the steps on a dry run
// and copies nothing, moves the tenant and records each change with
// RecordPlacement, refuses a malformed query and a cross-site request
// before anything runs, and answers a refused move with its code; Run's
// move and cleanup-move send the same requests.
func TestMoveEndpoint(t *testing.T) {
	kv, data := placedKV()
	var recorded atomic.Int64
	f := newMemFixture(t, tenantadmin.Config{RecordPlacement: func(context.Context, modules.Placed) error { recorded.Add(1); return nil }}, kv)
	if _, err := f.tenants.Provision(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	data(tenancy.Tagged, a)["k"] = "v"
	path := "/tenants/" + a.String() + "/move"

	status, body := f.do(req{method: "POST", path: path + "?module=kv&to=namespace&dry_run=1", header: jsonCT})
	if steps, _ := body["steps"].([]any); status != 200 || body["ok"] != true || len(steps) != 6 || len(data(tenancy.Namespace, a)) != 0 {
		t.Fatalf("dry run: %d %v", status, body)
	}
	for _, q := range []string{"?to=namespace", "?module=kv", "?module=kv&to=none", "?module=kv&to=namespace&dry_run=2", "?module=kv&to=namespace&force=1"} {
		status, body := f.do(req{method: "POST", path: path + q, header: jsonCT})
		wantCode(t, "move"+q, status, body, 400, tenancy.CodeOperatorRequestInvalid)
	}
	status, body = f.do(req{method: "POST", path: path + "?module=kv&to=namespace", header: with(jsonCT, "Origin", "https://evil.example")})
	if status != 403 || len(data(tenancy.Namespace, a)) != 0 {
		t.Fatalf("a cross-site move: %d %v", status, body)
	}
	status, body = f.do(req{method: "POST", path: path + "?module=mem&to=namespace", header: jsonCT})
	wantCode(t, "a module without placements", status, body, 409, tenancy.CodeTenantPlacementInvalid)

	status, body = f.do(req{method: "POST", path: path + "?module=kv&to=namespace", header: jsonCT})
	if status != 200 || body["ok"] != true || body["records"] != float64(1) || data(tenancy.Namespace, a)["k"] != "v" || f.tenants.Placement(a).At["kv"] != tenancy.Namespace {
		t.Fatalf("move: %d %v", status, body)
	}
	if recorded.Load() < 3 {
		t.Fatalf("RecordPlacement ran %d times, want the fence, the switch and the lift", recorded.Load())
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), []string{"cleanup-move", a.String(), "--module", "kv", "--from", "namespace"}, &out)
	if tenantadmin.ExitCode(err) != 2 || tenancy.CodeOf(err) != tenancy.CodeTenantMoveRefused {
		t.Fatalf("cleanup of the current placement: %v (exit %d)", err, tenantadmin.ExitCode(err))
	}
	if err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), []string{"cleanup-move", a.String(), "--module", "kv", "--from", "tagged"}, &out); err != nil || len(data(tenancy.Tagged, a)) != 0 {
		t.Fatalf("cleanup-move: %v %s", err, out.String())
	}
	out.Reset()
	if err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), []string{"move", a.String(), "--module", "kv", "--to", "tagged"}, &out); err != nil || data(tenancy.Tagged, a)["k"] != "v" {
		t.Fatalf("move back: %v %s", err, out.String())
	}
	if err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), []string{"move", a.String(), "--module", "kv"}, &out); tenantadmin.ExitCode(err) != 2 {
		t.Fatalf("move without --to: %v", err)
	}
}
