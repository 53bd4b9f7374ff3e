package checks_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/tenantwire/tenantwire/tenantvet/checks"
)

func TestLostCtx(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), checks.LostCtx, "lostctx", "lostctxmain")
}

func TestGoNoTenant(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), checks.GoNoTenant, "gonotenant")
}

// lostctx leaves goroutines to gonotenant: one finding per mistake.
func TestLostCtxLeavesGoroutines(t *testing.T) {
	for _, d := range analysistest.Run(&testing.T{}, analysistest.TestData(), checks.LostCtx, "gonotenant")[0].Diagnostics {
		t.Errorf("lostctx reported in a goroutine: %s", d.Message)
	}
}

func TestRebind(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), checks.Rebind, "rebind")
}

func TestRebindAllow(t *testing.T) {
	setAllow(t, "rebindallowed/...")
	analysistest.Run(t, analysistest.TestData(), checks.Rebind, "rebindallowed")
}

func TestRebindNotAllowed(t *testing.T) {
	results := analysistest.Run(&testing.T{}, analysistest.TestData(), checks.Rebind, "rebindallowed")
	if n := len(results[0].Diagnostics); n != 1 {
		t.Errorf("without -rebind.allow, rebindallowed got %d findings, want 1", n)
	}
}

func TestTenantSQL(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), checks.TenantSQL, "tenantsql")
}

func TestBypass(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), checks.Bypass, "bypass")
}

func TestInTxOuterCtx(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), checks.InTxOuterCtx, "intxctx")
}

func setAllow(t *testing.T, v string) {
	t.Helper()
	if err := checks.Rebind.Flags.Set("allow", v); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := checks.Rebind.Flags.Set("allow", ""); err != nil {
			t.Error(err)
		}
	})
}

// An adapter's unexported plumbing is no route.
func TestLostCtxUnexportedPlumbing(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), checks.LostCtx, "github.com/tenantwire/tenantwire/adapters/neo4j")
}
