package redis

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

var sinkKey string

// BenchmarkTargetScale is the adapter's CPU per call before the round
// trip, cycling over 1, 1,000 or 10,000 tenants, beside what hand-written code
// pays to build its key from the tenant: the part of a GET that differs
// from raw go-redis, measured without the server's noise.
func BenchmarkTargetScale(b *testing.B) {
	for _, tenants := range []int{1, 1000, 10000} {
		ctxs := make([]context.Context, tenants)
		for i := range ctxs {
			ctxs[i] = tenancy.WithTenant(context.Background(), tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1)))
		}
		b.Run(fmt.Sprintf("tenants=%d/baseline", tenants), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tn, _ := tenancy.Require(ctxs[i%tenants])
				sinkKey = "tw:raw-0a1b2c3d:" + tn.Hex() + ":user:42"
				i++
			}
		})
		for _, tc := range []struct {
			name string
			spec routeSpec
		}{
			{"tagged", routeSpec{name: "sessions", kind: kindCache, tenantAware: true}},
			{"namespace", routeSpec{name: "sessions", kind: kindCache, namespace: tenantNamespace("ns")}},
		} {
			r := newRoute(&core{module: "m"}, &tc.spec)
			b.Run(fmt.Sprintf("tenants=%d/%s", tenants, tc.name), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					_, _, k, _, err := r.target(ctxs[i%tenants], "user:42")
					if err != nil {
						b.Fatal(err)
					}
					sinkKey = k
					i++
				}
			})
		}
	}
}
