package neo4j

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestScopeFollowsRule: giving the graph kind the rule "the resolver is
// passed the tenant only when tenant-aware" moves the matrix row
// (namespace → none) and the runtime together: the database a session
// opens, and whether an unbound call is refused. A route that decided its
// scope from its own options would move only the matrix.
func TestScopeFollowsRule(t *testing.T) {
	probe := func(t *testing.T) (tenancy.Tier, []string, error) {
		t.Helper()
		rec := &recorder{}
		var (
			m floors.Matrix
			g *Graph
		)
		app := fx.New(fx.NopLogger, Module("m", withFake("plain", rec), GraphRoute("g", RouteConfig{Database: naming.PerTenant("acme")})),
			fx.Invoke(func(l modules.Live) { m = l.Matrix() }),
			fx.Invoke(fx.Annotate(func(v *Graph) { g = v }, fx.ParamTags(`name:"g"`))))
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = app.Stop(context.Background()) }()
		if _, err := g.CountNodes(tenancy.WithTenant(context.Background(), tenancytest.TenantA), nil, nil); err != nil {
			t.Fatal(err)
		}
		_, unbound := g.CountNodes(context.Background(), nil, nil)
		return m.Rows[0].Reached, rec.opened(), unbound
	}
	reached, sessions, unbound := probe(t)
	if reached != tenancy.Namespace {
		t.Errorf("shipped rule: reached %s, want namespace", reached)
	}
	tenancytest.RequireUnbound(t, unbound, "m", "neo4j", "g")
	if want := "plain/acme-" + tenancytest.TenantA.Hex(); len(sessions) != 1 || sessions[0] != want {
		t.Errorf("shipped rule: sessions %v, want [%s]", sessions, want)
	}

	testsvc.UseRule(t, &rules, Rules(), kindGraph, func(r *floors.KindRule) { r.ResolverCountsOnlyWhenTenantAware = true })
	reached, sessions, unbound = probe(t)
	if reached != tenancy.None {
		t.Errorf("flipped rule: reached %s, want none", reached)
	}
	if unbound != nil {
		t.Errorf("flipped rule: unbound call refused: %v", unbound)
	}
	if len(sessions) != 2 || strings.Contains(sessions[0]+sessions[1], "acme-") || sessions[0] != sessions[1] {
		t.Errorf("flipped rule: sessions %v, want both on the module's one database", sessions)
	}
}
