package modules_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// keepingTenants is an app of one module "log" whose verifier scans one
// family (holding the tenant's data when plant says so) and keeps another
// it cannot remove.
func keepingTenants(t *testing.T, plant map[tenancy.ID]bool) *modules.Tenants {
	t.Helper()
	type core struct{}
	scanned := modules.Family{Name: "entries", Kind: migrate.KindKeys, Where: "log:*", Route: "items"}
	shared := modules.Family{Name: "records in shared topic", Kind: migrate.KindRecords, Where: "events", Route: "events"}
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		fx.Provide(func() core { return core{} }),
		modules.ProvideTenantState(func(core) modules.TenantState {
			return modules.TenantState{Module: "log", Backend: "kv",
				Offboard: func(context.Context, tenancy.ID) error { time.Sleep(time.Millisecond); return nil },
				Verify: func(_ context.Context, id tenancy.ID) (modules.Erasure, error) {
					var e modules.Erasure
					n := int64(0)
					if plant[id] {
						n = 3
					}
					e.Check(scanned, n, "log:"+id.Hex())
					e.Keep(shared, "retention removes them")
					return e, nil
				}}
		}),
		fx.Populate(&tenants))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return tenants
}

// An offboard's proof lists what was scanned and found empty, what is
// kept and why, its times, and a digest that holds through JSON.
func TestErasureProofOfACleanOffboard(t *testing.T) {
	id := tenancy.MustParseID("7d1e8c2a-4b3f-4a9e-9c1d-2f6b8e0a1c11")
	tenants := keepingTenants(t, nil)
	before := time.Now()
	rep, err := tenants.Offboard(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Proof(id)
	if !p.Erased || p.Tenant != id.String() || len(p.Modules) != 1 {
		t.Fatalf("proof: %+v", p)
	}
	m := p.Modules[0]
	if len(m.Empty) != 1 || m.Empty[0].Where != "log:*" || m.Empty[0].Route != "items" || len(m.Left) != 0 {
		t.Fatalf("scanned families: %+v", m)
	}
	if len(m.Kept) != 1 || m.Kept[0].Kind != string(migrate.KindRecords) || m.Kept[0].Reason != "retention removes them" {
		t.Fatalf("kept: %+v", m.Kept)
	}
	if p.Started.Before(before.Add(-time.Second)) || !p.Ended.After(p.Started) {
		t.Fatalf("times: started %v ended %v", p.Started, p.Ended)
	}
	if !strings.HasPrefix(p.Digest, "sha256:") || len(p.Digest) != len("sha256:")+64 {
		t.Fatalf("digest %q", p.Digest)
	}
	if err := p.Check(); err != nil {
		t.Fatalf("check of the proof as written: %v", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back modules.ErasureProof
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Fatalf("check of the proof read back from JSON: %v\n%s", err, b)
	}
	if again := rep.Proof(id); again.Digest != p.Digest {
		t.Fatalf("the same report gives another digest: %s, %s", again.Digest, p.Digest)
	}
}

// A proof says not erased when anything is left or a module failed, and
// any change to it after the offboard fails Check with
// erasure_proof_altered.
func TestErasureProofRefusesAlteration(t *testing.T) {
	dirty := tenancy.MustParseID("7d1e8c2a-4b3f-4a9e-9c1d-2f6b8e0a1c12")
	tenants := keepingTenants(t, map[tenancy.ID]bool{dirty: true})
	rep, err := tenants.Offboard(context.Background(), dirty)
	if tenancy.CodeOf(err) != tenancy.CodeTenantErasureIncomplete {
		t.Fatalf("offboard: %v", err)
	}
	p := rep.Proof(dirty)
	if p.Erased || len(p.Modules[0].Left) != 1 || p.Modules[0].Left[0].Count != 3 || p.Modules[0].Error == "" || len(p.Modules[0].Empty) != 0 {
		t.Fatalf("proof of an incomplete erasure: %+v", p)
	}
	alter := map[string]func(*modules.ErasureProof){
		"erased":  func(p *modules.ErasureProof) { p.Erased = true },
		"tenant":  func(p *modules.ErasureProof) { p.Tenant = "7d1e8c2a-4b3f-4a9e-9c1d-2f6b8e0a1c13" },
		"left":    func(p *modules.ErasureProof) { p.Modules[0].Left = nil },
		"ended":   func(p *modules.ErasureProof) { p.Ended = p.Ended.Add(time.Nanosecond) },
		"reason":  func(p *modules.ErasureProof) { p.Modules[0].Kept[0].Reason = "" },
		"digest":  func(p *modules.ErasureProof) { p.Digest = "sha256:" + strings.Repeat("0", 64) },
		"no hash": func(p *modules.ErasureProof) { p.Digest = "" },
	}
	for name, change := range alter {
		q := rep.Proof(dirty)
		q.Modules = append([]modules.ProofModule(nil), q.Modules...)
		q.Modules[0].Kept = append([]modules.ProofFamily(nil), q.Modules[0].Kept...)
		change(&q)
		if err := q.Check(); tenancy.CodeOf(err) != tenancy.CodeErasureProofAltered {
			t.Errorf("%s altered: Check = %v, want erasure_proof_altered", name, err)
		}
	}
	if err := p.Check(); err != nil {
		t.Fatalf("the unaltered proof: %v", err)
	}
	if (modules.Report{}).Proof(dirty).Erased {
		t.Fatal("a report with no module proves nothing erased")
	}
}
