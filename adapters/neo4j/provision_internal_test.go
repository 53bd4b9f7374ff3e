package neo4j

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The recording driver stands in for an Enterprise server here: one
// Community server cannot create databases (provision_test.go runs the
// same runner against the real one).

// created is every CREATE DATABASE the recorder saw, as
// "driver/database mode: statement".
func created(rec *recorder) []string {
	var out []string
	for _, c := range rec.snapshot() {
		if strings.HasPrefix(c.cypher, "CREATE DATABASE") {
			out = append(out, c.driver+"/"+c.database+" "+c.mode+": "+c.cypher)
		}
	}
	return out
}

func createStmt(driver, db string) string {
	return driver + "/system auto: CREATE DATABASE `" + db + "` IF NOT EXISTS WAIT"
}

// TestRunnerProvisionCreatesEachDatabaseOnce: the module's runner creates
// every per-tenant database its routes name for the tenant, each once
// (two routes naming one database), on the system database of the plain
// driver, and nothing for a tagged route; a database the server lists is
// not created again; Community's refusal wraps ErrEnterpriseRequired with
// a fix; the zero tenant is unbound; a dry run lists the databases and
// creates none.
func TestRunnerProvisionCreatesEachDatabaseOnce(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	m := build[*migrate.Runner](t, "m", withFake("plain", rec),
		GraphRoute("a", RouteConfig{Database: naming.PerTenant("acme")}),
		GraphRoute("b", RouteConfig{Database: naming.PerTenant("acme")}),
		GraphRoute("c", RouteConfig{Database: naming.PerTenant("audit")}),
		GraphRoute("t", RouteConfig{TenantAware: true}))
	if err := m.Provision(ctx, tA); err != nil {
		t.Fatal(err)
	}
	want := []string{createStmt("plain", "acme-"+tA.Hex()), createStmt("plain", "audit-"+tA.Hex())}
	if got := created(rec); !slices.Equal(got, want) {
		t.Fatalf("created %q, want %q", got, want)
	}

	// The server lists the databases: nothing is created.
	rec = &recorder{reply: func(c call) ([]*drv.Record, error) {
		if strings.HasPrefix(c.cypher, "SHOW DATABASES") {
			return []*drv.Record{record("name", c.params["name"])}, nil
		}
		return defaultReply(c), nil
	}}
	m = build[*migrate.Runner](t, "m", withFake("plain", rec), GraphRoute("a", RouteConfig{Database: naming.PerTenant("acme")}))
	if err := m.Provision(ctx, tA); err != nil || len(created(rec)) != 0 {
		t.Fatalf("provisioning existing databases: %v, created %q", err, created(rec))
	}

	// Community Edition's refusal.
	rec = &recorder{reply: func(c call) ([]*drv.Record, error) {
		if strings.HasPrefix(c.cypher, "CREATE DATABASE") {
			return nil, &drv.Neo4jError{Code: "Neo.ClientError.Statement.UnsupportedAdministrationCommand",
				Msg: "Unsupported administration command: CREATE DATABASE"}
		}
		return defaultReply(c), nil
	}}
	m = build[*migrate.Runner](t, "m", withFake("plain", rec), GraphRoute("a", RouteConfig{Database: naming.PerTenant("acme")}))
	err := m.Provision(ctx, tB)
	if !errors.Is(err, ErrEnterpriseRequired) {
		t.Fatalf("Community refusal: %v, want ErrEnterpriseRequired", err)
	}
	for _, s := range []string{"route a", "acme-" + tB.Hex(), tB.String(), "UnsupportedAdministrationCommand", "(fix: ", "TenantAware"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("refusal %q does not say %q", err, s)
		}
	}
	if err := m.Provision(ctx, tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("zero tenant: %v", err)
	}

	// A dry run lists each tenant's databases and creates none.
	rec = &recorder{}
	m = build[*migrate.Runner](t, "m", withFake("plain", rec),
		GraphRoute("a", RouteConfig{Database: naming.PerTenant("acme")}),
		GraphRoute("b", RouteConfig{Database: naming.PerTenant("acme")}))
	rep, err := m.ProvisionAll(ctx, []tenancy.ID{tA, tB}, migrate.Options{DryRun: true, Concurrency: 1})
	if err != nil || rep.Done != 2 || len(rep.Failures) != 0 {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	var plan []string
	for _, c := range rep.Changes {
		plan = append(plan, c.Tenant.String()+" "+c.Module+" "+c.Create)
	}
	if want := []string{tA.String() + " m acme-" + tA.Hex(), tB.String() + " m acme-" + tB.Hex()}; !slices.Equal(plan, want) {
		t.Fatalf("dry run plan %q, want %q", plan, want)
	}
	if got := created(rec); len(got) != 0 {
		t.Fatalf("a dry run created %q", got)
	}
}

// TestRunnerProvisionRoutedCreatesOnTheTenantsServer: on a routed module a
// per-tenant database is created on the tenant's own driver, each
// tenant's on its own server.
func TestRunnerProvisionRoutedCreatesOnTheTenantsServer(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	m := build[*migrate.Runner](t, "m", withFakeRouted(rec),
		Routed(routedTo(map[tenancy.ID]routing.Credentials{tA: {Endpoint: "neo4j://a"}, tB: {Endpoint: "neo4j://b"}}), routing.Limits{}),
		GraphRoute("g", RouteConfig{Database: naming.PerTenant("acme")}), GraphRoute("r", RouteConfig{}))
	for _, id := range []tenancy.ID{tA, tB} {
		if err := m.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{createStmt("neo4j://a", "acme-"+tA.Hex()), createStmt("neo4j://b", "acme-"+tB.Hex())}
	if got := created(rec); !slices.Equal(got, want) {
		t.Fatalf("created %q, want %q", got, want)
	}
}
