package redis

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestTargetWithoutTelemetryAllocatesOnlyTheKey: in an app that gives no
// telemetry a call's entry costs the nil check and nothing else; its one
// allocation is the key, as before telemetry existed.
func TestTargetWithoutTelemetryAllocatesOnlyTheKey(t *testing.T) {
	r := newRoute(&core{module: "cache"}, &routeSpec{name: "sessions", kind: kindCache, tenantAware: true})
	if r.tel != nil {
		t.Fatal("a route of an app without telemetry holds instruments")
	}
	ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a"))
	call := func() {
		if _, _, _, done, err := r.target(ctx, "k"); err != nil {
			t.Fatal(err)
		} else {
			done()
		}
	}
	if a := testing.AllocsPerRun(100, call); a != 1 {
		t.Fatalf("target allocates %v times per call without telemetry, want 1 (the key)", a)
	}
}
