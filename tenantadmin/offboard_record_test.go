package tenantadmin_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantadmin"
)

// TestOffboardRecordsTheSuspension: with Config.RecordSuspended, an
// offboard writes the tenant's suspension to the store before removing
// anything, so a process started after a crash refuses the tenant; a
// failed write fails the offboard with the tenant's data still there.
func TestOffboardRecordsTheSuspension(t *testing.T) {
	var mu sync.Mutex
	var recorded []tenancy.ID
	fail := false
	f := newMemFixture(t, tenantadmin.Config{RecordSuspended: func(_ context.Context, id tenancy.ID) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("the store is down")
		}
		recorded = append(recorded, id)
		return nil
	}})
	mu.Lock()
	fail = true
	mu.Unlock()
	status, body := f.do(req{method: "POST", path: "/tenants/" + b.String() + "/offboard?confirm=" + b.String(), header: jsonCT})
	if status == 200 || body["ok"] != false || !f.hasData(b) {
		t.Fatalf("an offboard whose suspension could not be recorded: %d %v, B's data kept %v", status, body, f.hasData(b))
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	status, body = f.do(req{method: "POST", path: "/tenants/" + a.String() + "/offboard?confirm=" + a.String(), header: jsonCT})
	if status != 200 || body["ok"] != true || f.hasData(a) {
		t.Fatalf("offboard: %d %v", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(recorded) != 1 || recorded[0] != a {
		t.Fatalf("recorded %v, want A's suspension", recorded)
	}
}
