package postgres_test

import (
	"os"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioDynamicReadTenantSwitch: I2 (information), what a dynamic read pays when its
// connection last served another tenant and is closed rather than reused
// (TestDynamicReadConnectionServesOneTenant), against a read that reuses
// its tenant's connection. The baseline is also what every read cost
// before, when connections passed between tenants after DISCARD ALL. One
// connection, two tenants taking turns on one side, one tenant on the
// other: the worst case and the best.
func TestRatioDynamicReadTenantSwitch(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	run := unique()
	ds := dynModule(t, testsvc.PostgresURL(t), "tw"+run+"_", "sd_"+run, postgres.DynamicReadConfig{MaxConns: 1})
	provision(t, ds.c, tenancytest.TenantA, tenancytest.TenantB)
	read := func(i int) {
		ctx := ctxA
		if i%2 == 1 {
			ctx = ctxB
		}
		if _, err := ds.row(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	r := ratio.Inform(t, ratio.Pair{Label: "I2", Name: "pg-dynamic-read-tenant-switch", Iterations: 300, Rounds: 11,
		Ours: func(n int) {
			for i := range n {
				read(i)
			}
		},
		Baseline: func(n int) {
			for range n {
				read(0)
			}
		}})
	r.PrintCost(os.Stdout)
}
