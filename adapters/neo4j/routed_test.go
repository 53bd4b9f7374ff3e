package neo4j

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/internal/spelling"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A routed driver is dedicated: a tenant resolving to the server and
// database another tenant uses (whatever its credentials, URI scheme or
// spelling) is refused with dedicated_target_shared and opens no session;
// another database on the same server is its own target; every driver is
// closed when the app stops.
func TestRoutedTargetsAreDedicatedAndClosedOnStop(t *testing.T) {
	rec := &recorder{}
	tC := tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
	tD := tenancy.MustParseID("0d0d0d0d-0000-4000-8000-00000000000d")
	tE := tenancy.MustParseID("0e0e0e0e-0000-4000-8000-00000000000e")
	resolve := routedTo(map[tenancy.ID]routing.Credentials{
		tA: {Endpoint: "neo4j://shared", User: "u", Secret: "s"},
		tC: {Endpoint: "neo4j://shared", User: "u", Secret: "s"},
		tD: {Endpoint: "bolt+s://SHARED:7687", User: "d", Secret: "other"},
		tE: {Endpoint: "neo4j://shared", User: "u", Secret: "s", Params: map[string]string{"database": "e"}},
		tB: {Endpoint: "neo4j://b", User: "u", Secret: "other"},
	})
	var g *Graph
	app := fx.New(fx.NopLogger, Module("m", withFakeRouted(rec), Routed(resolve, routing.Limits{MaxClients: 4}), GraphRoute("g", RouteConfig{})),
		fx.Invoke(fx.Annotate(func(v *Graph) { g = v }, fx.ParamTags(`name:"g"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []tenancy.ID{tA, tB, tE} {
		if _, err := g.GetNode(tenancy.WithTenant(context.Background(), id), "n"); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []tenancy.ID{tC, tD} {
		_, err := g.GetNode(tenancy.WithTenant(context.Background(), id), "n")
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || te.Module != "m" || te.Backend != "neo4j" || te.Route != "g" {
			t.Fatalf("tenant %s on tenant A's database: %v", id, err)
		}
	}
	if got := rec.opened(); !slices.Equal(got, []string{"neo4j://shared/", "neo4j://b/", "neo4j://shared/e"}) {
		t.Fatalf("sessions %v", got)
	}
	if st := g.r.core.pools.Stats(); st.Pools != 3 || st.Tenants != 3 {
		t.Fatalf("stats %+v, want 3 drivers for 3 tenants", st)
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	closed := slices.Sorted(slices.Values(rec.closed))
	rec.mu.Unlock()
	if !slices.Equal(closed, []string{"neo4j://b", "neo4j://shared", "neo4j://shared"}) {
		t.Fatalf("closed on stop: %v", closed)
	}
}

// TenantAware on a routed driver is defence in depth: statements still
// carry the predicate on the tenant's own driver.
func TestTaggedOnRoutedKeepsThePredicate(t *testing.T) {
	rec := &recorder{}
	g := build[*Graph](t, "g", withFakeRouted(rec),
		Routed(routedTo(map[tenancy.ID]routing.Credentials{tA: {Endpoint: "neo4j://a"}}), routing.Limits{}), GraphRoute("g", RouteConfig{TenantAware: true}))
	exercise(t, g, ctxA)
	for _, c := range rec.snapshot() {
		if c.driver != "neo4j://a" || c.params["tenant"] != tA.String() || len(uncovered(c.cypher)) > 0 {
			t.Errorf("statement %+v", c)
		}
	}
}

// A target is the server and database: scheme, case, the default port and
// credentials do not make two targets.
func TestRoutedTarget(t *testing.T) {
	base, err := routedTarget(routing.Credentials{Endpoint: "neo4j://db.example:7687"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []routing.Credentials{
		{Endpoint: "bolt+s://DB.example", User: "u", Secret: "p"},
		{Endpoint: "neo4j+ssc://db.example:7687/"},
	} {
		if got, err := routedTarget(c, ""); err != nil || got != base {
			t.Errorf("%+v: %s, %v; want %s", c, got, err, base)
		}
	}
	for _, c := range []routing.Credentials{
		{Endpoint: "neo4j://db.example:7688"},
		{Endpoint: "neo4j://db.example", Params: map[string]string{"database": "t1"}},
	} {
		if got, _ := routedTarget(c, ""); got == base {
			t.Errorf("%+v shares %s", c, base)
		}
	}
	if _, err := routedTarget(routing.Credentials{Endpoint: "not a uri"}, ""); err == nil {
		t.Error("an invalid URI was accepted")
	}
}

// TestRoutedTargetGenerated: generated spellings of one database on
// 127.0.0.1 (address forms, scheme, the default port, the database's case)
// are always one target.
func TestRoutedTargetGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	spell := func() routing.Credentials {
		scheme := []string{"neo4j", "bolt", "neo4j+s", "bolt+ssc"}[r.IntN(4)]
		return routing.Credentials{
			Endpoint: scheme + "://" + spelling.Loopback(r, false) + spelling.Port(r, "7687", "7687"),
			Params:   map[string]string{"database": spelling.Case(r, "shop")},
		}
	}
	for range 1000 {
		a, b := spell(), spell()
		ta, err := routedTarget(a, "")
		if err != nil {
			t.Fatal(err)
		}
		if tb, err := routedTarget(b, ""); err != nil || ta != tb {
			t.Fatalf("%+v and %+v: %s vs %s (%v)", a, b, ta, tb, err)
		}
	}
}
