package neo4j_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func cypherFiles(kv ...string) fstest.MapFS {
	fs := fstest.MapFS{}
	for i := 0; i+1 < len(kv); i += 2 {
		fs[kv[i]] = &fstest.MapFile{Data: []byte(kv[i+1])}
	}
	return fs
}

// Bad migration files are refused at fx.New, before anything dials: a
// file that is not an idempotent schema command could not be rerun after
// a crash, and on a tagged module a uniqueness constraint without the
// tenant property would make one tenant's value block (and reveal)
// another's.
func TestMigrationFilesRefused(t *testing.T) {
	tagged := neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true})
	for name, c := range map[string]struct {
		route neo4j.Option
		files fstest.MapFS
		want  string
	}{
		"misnamed":        {tagged, cypherFiles("add_index.cypher", "CREATE INDEX i IF NOT EXISTS FOR (n:L) ON (n.p)"), "<version>_<name>"},
		"wrong kind":      {tagged, cypherFiles("0001_i.sql", "CREATE INDEX i IF NOT EXISTS FOR (n:L) ON (n.p)"), "kind"},
		"a write":         {tagged, cypherFiles("0001_seed.cypher", "CREATE (n:L {p: 1})"), "not a schema command"},
		"no if not exist": {tagged, cypherFiles("0001_i.cypher", "CREATE INDEX i FOR (n:L) ON (n.p)"), "IF NOT EXISTS"},
		"drop no if":      {tagged, cypherFiles("0001_i.cypher", "DROP INDEX i"), "IF EXISTS"},
		"second stmt":     {tagged, cypherFiles("0001_i.cypher", "CREATE INDEX i IF NOT EXISTS FOR (n:L) ON (n.p);\nMATCH (n) DETACH DELETE n;"), "not a schema command"},
		"empty":           {tagged, cypherFiles("0001_i.cypher", "// nothing\n;"), "no statement"},
		"unique, tagged": {tagged, cypherFiles("0001_u.cypher",
			"CREATE CONSTRAINT u IF NOT EXISTS FOR (n:Order) REQUIRE n.code IS UNIQUE"), "spans every tenant"},
		"composite without tenant, tagged": {tagged, cypherFiles("0001_u.cypher",
			"CREATE CONSTRAINT u IF NOT EXISTS FOR (n:Order) REQUIRE (n.shop, n.code) IS UNIQUE"), "spans every tenant"},
		"rel unique, tagged": {tagged, cypherFiles("0001_u.cypher",
			"CREATE CONSTRAINT u IF NOT EXISTS FOR ()-[r:PAID]-() REQUIRE r.ref IS RELATIONSHIP UNIQUE"), "spans every tenant"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, neo4j.Module("m", modules.FromGraph(), c.route, modules.Migrations(c.files)))
			if !strings.Contains(e.Detail, c.want) || e.Fix == "" || e.Module != "m" || e.Backend != "neo4j" {
				t.Fatalf("refusal %+v, want detail naming %q and a fix", e, c.want)
			}
		})
	}
}

// What is allowed: a uniqueness constraint that leads with the tenant
// property on a tagged module; any uniqueness on a module whose tenants
// have their own databases (routed), or with no tagged route; several
// statements per file, comments and a ';' inside a quoted name.
func TestMigrationFilesAccepted(t *testing.T) {
	tenantUnique := cypherFiles(
		"0001_u.cypher", "// per tenant\nCREATE CONSTRAINT u IF NOT EXISTS FOR (n:Order) REQUIRE (n.tenant_id, n.code) IS UNIQUE;\n",
		"0002_i.cypher", "CREATE INDEX `by;total` IF NOT EXISTS FOR (n:Order) ON (n.tenant_id, n.total);\n/* two */ DROP INDEX old IF EXISTS",
	)
	plainUnique := cypherFiles("0001_u.cypher", "CREATE CONSTRAINT u IF NOT EXISTS FOR (n:Order) REQUIRE n.code IS UNIQUE")
	tenancytest.RequireWires(t, neo4j.Module("tagged", modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}), modules.Migrations(tenantUnique)))
	tenancytest.RequireWires(t, neo4j.Module("routed", neo4j.Routed(resolver, routing.Limits{}), neo4j.GraphRoute("g", neo4j.RouteConfig{}), modules.Migrations(plainUnique)))
	tenancytest.RequireWires(t, neo4j.Module("none", modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{}), modules.Migrations(plainUnique)))
}
