package neo4j_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/auth"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Helpers for the tests that run against the real Neo4j servers
// scripts/neo4j.sh starts (see internal/testsvc).

func authOf(s testsvc.Neo4jServer) auth.TokenManager {
	if s.User == "" {
		return drv.NoAuth()
	}
	return drv.BasicAuth(s.User, s.Password, "")
}

func connect(s testsvc.Neo4jServer) neo4j.Option { return neo4j.Connect(s.URI, authOf(s)) }

func credentials(s testsvc.Neo4jServer) routing.Credentials {
	return routing.Credentials{Endpoint: s.URI, User: s.User, Secret: s.Password}
}

// aOnFirstBOnSecond routes tenant A to s1 and B to s2; any other tenant has
// no server.
func aOnFirstBOnSecond(s1, s2 testsvc.Neo4jServer) routing.Resolver {
	return func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		switch id {
		case tenancytest.TenantA:
			return credentials(s1), nil
		case tenancytest.TenantB:
			return credentials(s2), nil
		}
		return routing.Credentials{}, fmt.Errorf("no server for tenant %s", id)
	}
}

// serversOf routes each tenant of m to its server; any other tenant has
// no server.
func serversOf(m map[tenancy.ID]testsvc.Neo4jServer) routing.Resolver {
	return func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		if s, ok := m[id]; ok {
			return credentials(s), nil
		}
		return routing.Credentials{}, fmt.Errorf("no server for tenant %s", id)
	}
}

// start builds and starts a module and returns its route named route.
func start[T any](t testing.TB, route string, opts ...neo4j.Option) T {
	t.Helper()
	var out T
	susp := &modules.Suspensions{}
	app := fx.New(fx.NopLogger, fx.Supply(susp), neo4j.Module("probe", opts...),
		fx.Invoke(fx.Annotate(func(v T) { out = v }, fx.ParamTags(`name:"`+route+`"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	suspensionsOf.Store(any(out), susp)
	return out
}

// suspensionsOf is the suspended set of the app each route object was
// built in, for the conformance kit's suspension check.
var suspensionsOf sync.Map

// suspended sets p.Suspensions to the set of obj's app.
func suspended(p tenancytest.Probe, obj any) tenancytest.Probe {
	if s, ok := suspensionsOf.Load(obj); ok {
		p.Suspensions = s.(*modules.Suspensions)
	}
	return p
}

func graph(t testing.TB, route string, opts ...neo4j.Option) *neo4j.Graph {
	t.Helper()
	return start[*neo4j.Graph](t, route, opts...)
}

// graphAndRunner starts a module "probe" and returns its route named
// route and its *migrate.Runner (which provisions tenants).
func graphAndRunner(t testing.TB, route string, opts ...neo4j.Option) (*neo4j.Graph, *migrate.Runner) {
	t.Helper()
	var g *neo4j.Graph
	var m *migrate.Runner
	susp := &modules.Suspensions{}
	app := fx.New(fx.NopLogger, fx.Supply(susp), neo4j.Module("probe", opts...),
		fx.Invoke(fx.Annotate(func(gg *neo4j.Graph, mm *migrate.Runner) { g, m = gg, mm }, fx.ParamTags(`name:"`+route+`"`, `name:"probe"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	suspensionsOf.Store(any(g), susp)
	return g, m
}

// uniqueLabel keeps each test's nodes apart from every other run's on the
// shared servers.
func uniqueLabel(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "TwProbe_" + hex.EncodeToString(b[:])
}

// direct is a plain driver on one server, bypassing the adapter: it shows
// where data physically went.
type direct struct {
	t testing.TB
	d drv.DriverWithContext
}

func directTo(t testing.TB, s testsvc.Neo4jServer) direct {
	t.Helper()
	d, err := drv.NewDriverWithContext(s.URI, authOf(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return direct{t, d}
}

func (d direct) query(cypher string, params map[string]any) []*drv.Record {
	d.t.Helper()
	res, err := drv.ExecuteQuery(context.Background(), d.d, cypher, params, drv.EagerResultTransformer)
	if err != nil {
		d.t.Fatalf("%s: %v", cypher, err)
	}
	return res.Records
}

// count is how many nodes carry label on this server, whoever wrote them.
func (d direct) count(label string) int64 {
	d.t.Helper()
	recs := d.query("MATCH (n:`"+label+"`) RETURN count(n) AS n", nil)
	return recs[0].Values[0].(int64)
}

// edition is the server's edition: "community" or "enterprise".
func (d direct) edition() string {
	d.t.Helper()
	recs := d.query("CALL dbms.components() YIELD edition RETURN edition", nil)
	return recs[0].Values[0].(string)
}

// removeLabel deletes every node carrying label (test clean-up).
func (d direct) removeLabel(label string) {
	d.t.Helper()
	d.query("MATCH (n:`"+label+"`) DETACH DELETE n", nil)
}
