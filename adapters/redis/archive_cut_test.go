package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// stateOf fills dst with the module's part in the tenant lifecycle.
func stateOf(module string, dst **modules.TenantState) fx.Option {
	return fx.Invoke(fx.Annotate(func(states []*modules.TenantState) {
		for _, s := range states {
			if s.Module == module {
				*dst = s
			}
		}
	}, fx.ParamTags(`group:"tenantwire_tenant_state"`)))
}

// TestArchiveImportCutRedis, on one server and on the cluster: an import
// of A's keys (tagged, namespace with a TTL, a counter with its AddOnce
// marker) into C cut on both sides of each page it restores, then recovered as documented
// (offboard, provision, rerun), leaves C with exactly A's keys, none lost
// and none twice; a cut that restored some keys is refused on a plain
// rerun.
func TestArchiveImportCutRedis(t *testing.T) {
	onEachTopology(t, func(t *testing.T, opts *goredis.UniversalOptions) {
		run := strings.ToLower(tenancytest.FreshTenant(t).Hex()[:8])
		var state *modules.TenantState
		r := archiveRedisApp(t, redis.Connect(opts), run, stateOf("cache", &state))
		a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
		for _, id := range []tenancy.ID{a, c} {
			t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
		}
		ctx := tenancy.WithTenant(context.Background(), a)
		// Past two pages of the import's pipeline.
		for i := range 1100 {
			rt := r.Tagged
			if i%2 == 1 {
				rt = r.NS
			}
			if err := rt.Set(ctx, fmt.Sprint("k", i), []byte{0xff, byte(i)}, time.Duration(i%3)*time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := r.Count.AddOnce(ctx, "n", "op-1", 5, time.Hour); err != nil {
			t.Fatal(err)
		}
		archive := exportArchive(t, r.Tenants, a)
		left := tenancytest.CheckImportCut(t, tenancytest.ImportCut{Tenants: r.Tenants, Import: state.Import, Module: "cache", Target: c, Archive: archive,
			At: []int{0, 1, 499, 500, 501, 1000, 1001, 1100}})
		if left != 5 {
			t.Errorf("%d cuts left keys behind, want the 5 after the first page of 500 was restored", left)
		}
		// The last round left C empty and provisioned: import once more,
		// and C's AddOnce of A's operation is not applied twice.
		if err := r.Tenants.Import(context.Background(), c, strings.NewReader(string(archive))); err != nil {
			t.Fatal(err)
		}
		n, applied, err := r.Count.AddOnce(tenancy.WithTenant(context.Background(), c), "n", "op-1", 5, time.Hour)
		if err != nil || applied || n != 5 {
			t.Errorf("C's AddOnce of A's operation after the import: %d applied=%v %v, want 5, not applied", n, applied, err)
		}
	})
}

func exportArchive(t *testing.T, tn *modules.Tenants, id tenancy.ID) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tn.Export(context.Background(), id, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
