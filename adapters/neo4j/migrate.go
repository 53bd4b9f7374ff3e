package neo4j

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// schemaCommand is what a step may hold: Neo4j 5 runs schema commands
// only in their own transaction, never beside writes, and a step must be
// safe to repeat (a crash between a statement and its record reruns it).
var (
	schemaCommand = regexp.MustCompile(`(?is)^(CREATE|DROP)\s+(CONSTRAINT|((RANGE|TEXT|POINT|FULLTEXT|LOOKUP|VECTOR)\s+)?INDEX)\b`)
	ifNotExists   = regexp.MustCompile(`(?is)\bIF\s+NOT\s+EXISTS\b`)
	ifExists      = regexp.MustCompile(`(?is)\bIF\s+EXISTS\b`)
	// uniqueness: REQUIRE <properties> IS [NODE|REL[ATIONSHIP]] UNIQUE|KEY.
	uniqueness = regexp.MustCompile(`(?is)\bREQUIRE\s+(.+?)\s+IS\s+((NODE|REL|RELATIONSHIP)\s+)?(UNIQUE|KEY)\b`)
)

// checkSteps splits and checks the module's steps; tagged says a route
// stamps the tenant property on the module's shared database.
func checkSteps(set migrate.Set, tagged bool) (map[int64][]string, []tenancy.Problem) {
	stmts := make(map[int64][]string, len(set))
	var bad []tenancy.Problem
	for _, st := range set {
		ss := splitStatements(string(st.Body))
		if len(ss) == 0 {
			bad = append(bad, tenancy.Problem{Detail: "migration " + st.File() + " holds no statement", Fix: "put a schema command in the file or remove it"})
		}
		for _, s := range ss {
			if p := checkStatement(s, tagged); p != nil {
				bad = append(bad, tenancy.Problem{Detail: fmt.Sprintf("migration %s: %s: %q", st.File(), p.Detail, s), Fix: p.Fix})
			}
		}
		stmts[st.Version] = ss
	}
	return stmts, bad
}

func checkStatement(s string, tagged bool) *tenancy.Problem {
	m := schemaCommand.FindStringSubmatch(s)
	if m == nil {
		return &tenancy.Problem{Detail: "not a schema command",
			Fix: "a Neo4j migration holds only CREATE/DROP CONSTRAINT or INDEX commands (Neo4j 5 cannot run them beside writes); do data changes through the module's routes"}
	}
	if strings.EqualFold(m[1], "CREATE") && !ifNotExists.MatchString(s) {
		return &tenancy.Problem{Detail: "CREATE without IF NOT EXISTS",
			Fix: "write CREATE CONSTRAINT|INDEX <name> IF NOT EXISTS ...: a step cut off by a crash runs again, so it must be safe to repeat"}
	}
	if strings.EqualFold(m[1], "DROP") && !ifExists.MatchString(s) {
		return &tenancy.Problem{Detail: "DROP without IF EXISTS",
			Fix: "write DROP CONSTRAINT|INDEX <name> IF EXISTS: a step cut off by a crash runs again, so it must be safe to repeat"}
	}
	if u := uniqueness.FindStringSubmatch(s); u != nil && tagged && !hasTenantProperty(u[1]) {
		return &tenancy.Problem{Detail: "a uniqueness constraint without " + TenantProperty + " on a module with tagged routes spans every tenant (one tenant's value blocks, and reveals, another's)",
			Fix: fmt.Sprintf("put the tenant property first in the constraint: REQUIRE (n.%s, n.<property>) IS UNIQUE", TenantProperty)}
	}
	return nil
}

// hasTenantProperty reports whether a REQUIRE property list ("n.code",
// "(n.tenant_id, n.code)") names the tenant property.
func hasTenantProperty(list string) bool {
	list = strings.Trim(strings.TrimSpace(list), "()")
	for _, p := range strings.Split(list, ",") {
		_, prop, ok := strings.Cut(strings.TrimSpace(p), ".")
		if ok && strings.Trim(strings.TrimSpace(prop), "`") == TenantProperty {
			return true
		}
	}
	return false
}

// splitStatements cuts a file at ';' outside quotes, backticks and
// comments, dropping comments and empty statements.
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '/' && i+1 < len(body) && body[i+1] == '/':
			for i < len(body) && body[i] != '\n' {
				i++
			}
			cur.WriteByte('\n')
		case c == '/' && i+1 < len(body) && body[i+1] == '*':
			end := strings.Index(body[i+2:], "*/")
			if end < 0 {
				i = len(body)
			} else {
				i += end + 3
			}
			cur.WriteByte(' ')
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(body) && body[j] != c {
				if body[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			cur.WriteString(body[i:min(j+1, len(body))])
			i = j
		case c == ';':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// lifecycle loads and checks the module's migrations, adds its version
// check to spec and returns the build of its runner.
func lifecycle(spec *modules.Spec, cfg *config) func(*core) *migrate.Runner {
	set, bad := cfg.Load("cypher")
	tagged, perTenant := false, cfg.routed != nil
	for _, r := range cfg.routes {
		tagged = tagged || len(set) > 0 && cfg.routed == nil && rules.Decide(r.floorsRoute(false)).Tagged
		perTenant = perTenant || r.prefix != "" || r.database != nil
	}
	stmts, badSteps := checkSteps(set, tagged)
	// Tenants sharing the database have no version of their own in the
	// registry (the shared run records none): it is read only perTenant.
	modules.AddVersions(spec, modules.Versions[*core]{Versioning: cfg.Versioning, Latest: set.Latest(), PerTenant: perTenant,
		Invalid: append(bad, badSteps...), Gate: func(c *core) *migrate.Gate { return c.gate },
		Shared: func(c *core, ctx context.Context) error { return c.sharedCurrent(ctx, cfg.routes) }})
	return func(c *core) *migrate.Runner {
		t := &lifecycleTarget{core: c, routes: cfg.routes, stmts: stmts, teardown: cfg.Teardown}
		return t.runner(set, cfg.Registry)
	}
}
