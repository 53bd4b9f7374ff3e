package neo4j

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// archiveReply answers an export with two nodes and a relationship
// between them, and an import's creates with new element ids.
func archiveReply(c call) ([]*drv.Record, error) {
	row := func(v ...any) *drv.Record { return &drv.Record{Values: v} }
	switch q := c.cypher; {
	case strings.HasPrefix(q, "CALL db.labels()"):
		return []*drv.Record{row("Person")}, nil
	case strings.Contains(q, "ORDER BY ls, p"):
		return []*drv.Record{row("4:db:1", []any{"Person"}, map[string]any{"name": "ada"}), row("4:db:2", []any{"Person"}, map[string]any{"name": "bob"})}, nil
	case strings.HasPrefix(q, "MATCH (a)-[x]->(b)"):
		return []*drv.Record{row("4:db:1", "4:db:2", "KNOWS", map[string]any{"since": int64(1)})}, nil
	case strings.Contains(q, "CREATE (n)"):
		var out []*drv.Record
		for _, r := range c.params["rows"].([]any) {
			key := r.(map[string]any)["key"].(string)
			out = append(out, row(key, "4:new:"+key))
		}
		return out, nil
	case strings.Contains(q, "CREATE (a)-[x"):
		return []*drv.Record{row(int64(len(c.params["rows"].([]any))))}, nil
	}
	return defaultReply(c), nil
}

// Dedicated: a routed tenant's export reads its own driver and database,
// all of it (no tenant predicate: the database is the tenant's), and an
// import into another tenant writes on that tenant's driver and database
// only, with no tenant property stamped and nothing of the source
// tenant's id in any statement.
func TestArchiveDedicatedUsesEachTenantsOwnDatabase(t *testing.T) {
	rec := &recorder{reply: archiveReply}
	resolve := routedTo(map[tenancy.ID]routing.Credentials{
		tA: {Endpoint: "neo4j://a", User: "a", Secret: "sa", Params: map[string]string{"database": "dba"}},
		tB: {Endpoint: "neo4j://b", User: "b", Secret: "sb", Params: map[string]string{"database": "dbb"}},
	})
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		Module("m", withFakeRouted(rec), Routed(resolve, routing.Limits{}), GraphRoute("g", RouteConfig{})),
		fx.Populate(&tenants))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	var buf bytes.Buffer
	if err := tenants.Export(context.Background(), tA, &buf); err != nil {
		t.Fatal(err)
	}
	archive := buf.String()
	for _, want := range []string{`"tier":"dedicated"`, `"key":"2","value":{"labels":["Person"],"props":{"name":"bob"}}`, `{"type":"KNOWS","from":"1","to":"2","props":{"since":1}}`} {
		if !strings.Contains(archive, want) {
			t.Errorf("the archive lacks %s:\n%s", want, archive)
		}
	}
	exported := rec.snapshot()
	if err := tenants.Import(context.Background(), tB, strings.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	imported := rec.snapshot()[len(exported):]
	for _, c := range exported {
		if c.driver != "neo4j://a" || c.database != "dba" || strings.Contains(c.cypher, TenantProperty+" = $tenant") {
			t.Errorf("export of A: %s on %s/%s", c.cypher, c.driver, c.database)
		}
	}
	creates, claims := 0, 0
	for _, c := range imported {
		if c.driver != "neo4j://b" || c.database != "dbb" || strings.Contains(c.cypher, "SET n."+TenantProperty) || strings.Contains(c.cypher, "SET x."+TenantProperty) {
			t.Errorf("import into B: %s on %s/%s", c.cypher, c.driver, c.database)
		}
		switch {
		case strings.Contains(c.cypher, "CREATE (:"+historyLabel):
			claims++
		case strings.Contains(c.cypher, "CREATE ("):
			creates++
		}
		for _, v := range c.params {
			if s := strings.ToLower(fmt.Sprint(v)); strings.Contains(s, tA.Hex()) || strings.Contains(s, tA.String()) {
				t.Errorf("import into B names A: %s %v", c.cypher, c.params)
			}
		}
	}
	if creates != 2 || claims != 1 {
		t.Errorf("the import ran %d creates and %d claims, want 2 (the nodes, then the relationship) and one claim of B's database", creates, claims)
	}
}

// Namespace: an import into a tenant whose database does not exist is
// tenant_not_provisioned, not a driver error.
func TestArchiveImportIntoAMissingDatabase(t *testing.T) {
	missing := false
	rec := &recorder{}
	rec.reply = func(c call) ([]*drv.Record, error) {
		if missing && strings.Contains(c.cypher, "CREATE (n)") {
			return nil, &drv.Neo4jError{Code: "Neo.ClientError.Database.DatabaseNotFound", Msg: "no such database"}
		}
		return archiveReply(c)
	}
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		Module("m", withFake("plain", rec), GraphRoute("g", RouteConfig{Database: naming.PerTenant("twar")})),
		fx.Populate(&tenants))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	var buf bytes.Buffer
	if err := tenants.Export(context.Background(), tA, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"tier":"namespace"`) {
		t.Errorf("the archive's tier:\n%s", buf.String())
	}
	missing = true
	err := tenants.Import(context.Background(), tB, &buf)
	if !errors.Is(err, tenancy.CodeTenantNotProvisioned) {
		t.Fatalf("import into a tenant without its database: %v", err)
	}
}
