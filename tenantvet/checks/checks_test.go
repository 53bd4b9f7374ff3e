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
