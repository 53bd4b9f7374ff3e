package memory

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestScopeFollowsRule: giving the cache kind the rule "the resolver is
// passed the tenant only when tenant-aware" moves the matrix row
// (namespace → none) and the runtime together: the container an entry
// lands in, and whether an unbound call is refused.
func TestScopeFollowsRule(t *testing.T) {
	probe := func(t *testing.T) (tenancy.Tier, *store, error) {
		t.Helper()
		var (
			m  floors.Matrix
			kv *Cache
		)
		app := fx.New(fx.NopLogger, Module("m", CacheRoute("c", CacheConfig{Keys: naming.PerTenant("kv")})),
			fx.Invoke(func(l modules.Live) { m = l.Matrix() }), fx.Populate(&kv))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		if err := kv.Set(tenancy.WithTenant(context.Background(), tenancytest.TenantA), "k", []byte("a"), time.Minute); err != nil {
			t.Fatal(err)
		}
		return m.Rows[0].Reached, kv.s, kv.Set(context.Background(), "k", []byte("u"), time.Minute)
	}
	entry := func(s *store, container string) string {
		return string(s.kv[container][entryKey{key: "k"}].value)
	}
	perTenant, shared := "kv."+tenancytest.TenantA.Hex(), "kv."+tenancy.ID{}.Hex()

	reached, s, unbound := probe(t)
	if reached != tenancy.Namespace {
		t.Errorf("shipped rule: reached %s, want namespace", reached)
	}
	tenancytest.RequireUnbound(t, unbound, "m", "memory", "c")
	if entry(s, perTenant) != "a" || len(s.kv) != 1 {
		t.Errorf("shipped rule: containers %v, want A's entry in %s only", s.kv, perTenant)
	}

	testsvc.UseRule(t, &rules, Rules(), "cache", func(r *floors.KindRule) { r.ResolverCountsOnlyWhenTenantAware = true })
	reached, s, unbound = probe(t)
	if reached != tenancy.None {
		t.Errorf("flipped rule: reached %s, want none", reached)
	}
	if unbound != nil {
		t.Errorf("flipped rule: unbound call refused: %v", unbound)
	}
	// A's entry and the unbound one share the container: the last wins.
	if entry(s, shared) != "u" || len(s.kv) != 1 {
		t.Errorf("flipped rule: containers %v, want one shared entry in %s", s.kv, shared)
	}
}
