package neo4j

import (
	"context"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// RouteConfig.MaxDepth caps the route's traversals; 0 is DefaultMaxDepth.
// A depth over the cap is refused before a statement runs.
func TestRouteConfigMaxDepthCapsTraversal(t *testing.T) {
	for _, c := range []struct {
		cfg  RouteConfig
		want int
	}{
		{RouteConfig{TenantAware: true}, DefaultMaxDepth},
		{RouteConfig{TenantAware: true, MaxDepth: 3}, 3},
		{RouteConfig{TenantAware: true, MaxDepth: maxMaxDepth}, maxMaxDepth},
	} {
		rec := &recorder{}
		g := build[*Graph](t, "g", withFake("plain", rec), GraphRoute("g", c.cfg))
		if _, err := g.Traverse(ctxA, "4:db:1", Traversal{MaxDepth: c.want}); err != nil {
			t.Errorf("MaxDepth %d: traversal to the cap: %v", c.cfg.MaxDepth, err)
		}
		if _, err := g.Traverse(ctxA, "4:db:1", Traversal{MaxDepth: c.want + 1}); err == nil {
			t.Errorf("MaxDepth %d: traversal to %d was not refused", c.cfg.MaxDepth, c.want+1)
		}
		if n := len(rec.snapshot()); n != 1 {
			t.Errorf("MaxDepth %d: %d statements ran, want only the accepted traversal's", c.cfg.MaxDepth, n)
		}
	}
}

// A caller's resolver is never called while the app is built (it is the
// caller's code, and may do anything), only per call.
func TestCallersResolverNotRunAtBuild(t *testing.T) {
	calls := 0
	rec := &recorder{}
	prefixed := tenantDatabase("acme")
	g := build[*Graph](t, "g", withFake("plain", rec), GraphRoute("g", RouteConfig{Database: naming.Func(func(id tenancy.ID) (string, error) {
		calls++
		return prefixed(id)
	})}))
	if calls != 0 {
		t.Fatalf("resolver called %d times while the app was built", calls)
	}
	if _, err := g.CountNodes(ctxA, nil, nil); err != nil {
		t.Fatal(err)
	}
	if want := "plain/acme-" + tA.Hex(); calls != 1 || rec.opened()[0] != want {
		t.Fatalf("calls %d, sessions %v; want 1 call and %s", calls, rec.opened(), want)
	}
}

// A caller's resolver with a bad prefix is not checked at fx.New, so each
// call fails closed instead: no session.
func TestResolverBadPrefixFailsPerCall(t *testing.T) {
	rec := &recorder{}
	bad := tenantDatabase("Bad")
	g := build[*Graph](t, "g", withFake("plain", rec), GraphRoute("g", RouteConfig{Database: naming.Func(func(id tenancy.ID) (string, error) { return bad(id) })}))
	if _, err := g.CountNodes(ctxA, nil, nil); err == nil || !strings.Contains(err.Error(), `"Bad-`) {
		t.Fatalf("call with a bad prefix: %v", err)
	}
	if s := rec.opened(); len(s) != 0 {
		t.Fatalf("sessions %v", s)
	}
	tenancytest.RequireUnbound(t, func() error { _, err := g.CountNodes(context.Background(), nil, nil); return err }(), "m", "neo4j", "g")
}

// naming.PerTenant(prefix) names the databases tenantDatabase(prefix) names.
func TestPerTenantDatabaseNames(t *testing.T) {
	rec := &recorder{}
	g := build[*Graph](t, "g", withFake("plain", rec), GraphRoute("g", RouteConfig{Database: naming.PerTenant("acme")}))
	if _, err := g.CountNodes(ctxA, nil, nil); err != nil {
		t.Fatal(err)
	}
	want, err := tenantDatabase("acme")(tA)
	if err != nil || rec.opened()[0] != "plain/"+want {
		t.Fatalf("sessions %v, want plain/%s (%v)", rec.opened(), want, err)
	}
}
