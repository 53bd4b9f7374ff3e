package tenanthttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// TestRatioP14HTTPLimiter: P14-http-limiter, the HTTP C pair's request
// (64 goroutines, GET over loopback keep-alive connections naming tenant
// i mod tenants) through the boundary with Admission vs the same
// boundary without it, at 1 and 10,000 tenants ("-10000"). Every tenant
// has limits it never reaches, so each request takes the whole check (a
// bucket and an in-flight count, state for every tenant) and is served.
func TestRatioP14HTTPLimiter(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	start := func(adm *tenanthttp.Admission) string {
		var srv *tenanthttp.Server
		app := fx.New(fx.NopLogger,
			tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true, Admission: adm}),
			tenanthttp.Route("GET /t", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id, _ := tenancy.FromContext(r.Context())
				w.Header().Set("Content-Type", "text/plain")
				_, _ = io.WriteString(w, id.Hex())
			})),
			fx.Populate(&srv))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Stop(context.Background()) })
		return "http://" + srv.TenantAddr() + "/t"
	}
	adm := &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 1e9, Burst: 1 << 30, InFlight: 1 << 20}}
	limited, plain := start(adm), start(nil)
	const g = 64
	for _, tenants := range []int{1, 10000} {
		ids, hexes := make([]string, tenants), make([]string, tenants)
		for i := range ids {
			id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1))
			ids[i], hexes[i] = id.String(), id.Hex()
		}
		name := "http-limiter"
		if tenants != 1 {
			name += "-" + strconv.Itoa(tenants)
		}
		t.Run(strconv.Itoa(tenants), func(t *testing.T) {
			ours := httpSide(t, g, limited, ids, hexes)
			base := httpSide(t, g, plain, ids, hexes)
			for i := range tenants {
				if err := errors.Join(ours(i), base(i)); err != nil {
					t.Fatal(err)
				}
			}
			ratio.ReportParallel(t, ratio.Pair{Label: "P14", Name: name, Iterations: 12000, Rounds: 41, Cap: 60 * time.Second, Step: 640,
				Ours: ratio.ParallelSide(t, g, tenants, ours), Baseline: ratio.ParallelSide(t, g, tenants, base)}, 1.03, 15000)
			if n := adm.Tracked(); n < min(tenants, tenanthttp.DefaultMaxTenants) {
				t.Errorf("%d tenants tracked after a run over %d: the check did not run", n, tenants)
			}
		})
	}
}
