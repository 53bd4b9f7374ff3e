package tenantadmin_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantadmin"
)

// TestOffboardDrainIsBounded: an offboard over the operator listener
// whose tenant has a call in flight waits Config.DrainWait, not for as
// long as the call runs, then answers its own code with nothing removed
// and the tenant suspended; once the call ends, the same request offboards.
func TestOffboardDrainIsBounded(t *testing.T) {
	f := newMemFixture(t, tenantadmin.Config{DrainWait: 200 * time.Millisecond})
	end, err := f.tenants.Enter(a, "memory", "mem", "carts")
	if err != nil {
		t.Fatal(err)
	}
	off := req{method: "POST", path: "/tenants/" + a.String() + "/offboard?confirm=" + a.String(), header: jsonCT}
	began := time.Now()
	st, body := f.do(off)
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the offboard waited %v for a call in flight, past its DrainWait", took)
	}
	if st != 409 || body["code"] != string(tenancy.CodeTenantDrainTimeout) {
		t.Fatalf("offboard with a call in flight: %d %v, want 409 %s", st, body, tenancy.CodeTenantDrainTimeout)
	}
	if !f.tenants.Suspended(a) || !f.hasData(a) {
		t.Fatal("a timed-out offboard removed data or lifted the suspension")
	}
	end()
	if st, body := f.do(off); st != 200 || body["ok"] != true {
		t.Fatalf("offboard once the call ended: %d %v", st, body)
	}
	if f.hasData(a) {
		t.Error("the offboard left the tenant's data")
	}
}

// TestNegativeDrainWaitRefused: a DrainWait below zero is refused at fx.New.
func TestNegativeDrainWaitRefused(t *testing.T) {
	app := fx.New(fx.NopLogger, modules.Lifecycle(), tenantadmin.Module(tenantadmin.Config{Registry: migrate.NewMemoryRegistry(), DrainWait: -time.Second}))
	err := app.Err()
	if tenancy.CodeOf(err) != tenancy.CodeTenantAdminUnwired || !strings.Contains(err.Error(), "DrainWait") {
		t.Fatalf("negative DrainWait: %v", err)
	}
}
