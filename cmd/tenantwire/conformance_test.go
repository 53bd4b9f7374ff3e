package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestEveryBackendRunsTheConformanceKit: each backend in Backends has a
// test that runs tenancytest.Conformance over its Rules (in its adapter's
// folder or its folder of the integration module), so every row of the
// capability matrix has a probe behind it. It reads the sources: which
// package each entry of backends.go comes from, and which Rules each
// Conformance call is given.
func TestEveryBackendRunsTheConformanceKit(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "backends.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string // import paths of the packages whose Rules are listed
	imports := importsOf(f)
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Rules" {
			if id, ok := sel.X.(*ast.Ident); ok {
				pkgs = append(pkgs, imports[id.Name])
			}
		}
		return true
	})
	if len(pkgs) != len(Backends) {
		t.Fatalf("found %d Rules in backends.go (%v), Backends holds %d", len(pkgs), pkgs, len(Backends))
	}
	for _, pkg := range pkgs {
		rel, ok := strings.CutPrefix(pkg, "github.com/tenantwire/tenantwire/")
		if !ok {
			t.Errorf("%s: not a package of this repository", pkg)
			continue
		}
		dirs := []string{filepath.Join("../..", rel), filepath.Join("../../integration", path.Base(rel))}
		if !runsConformance(t, dirs, pkg) {
			t.Errorf("no test in %v runs tenancytest.Conformance over %s.Rules: add a conformance_test.go (docs/concepts.md, Adding a backend)",
				dirs, path.Base(pkg))
		}
	}
}

// importsOf maps each import's name in f to its path.
func importsOf(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = p
	}
	return out
}

// runsConformance reports whether a test file in dirs calls
// tenancytest.Conformance with the Rules() of the package pkg.
func runsConformance(t *testing.T, dirs []string, pkg string) bool {
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, name := range files {
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "tenancytest.Conformance(") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			imports, found := importsOf(f), false
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 2 || !isSelector(call.Fun, imports, "github.com/tenantwire/tenantwire/tenancytest", "Conformance") {
					return true
				}
				// The rules are pkg.Rules(), a fresh value per call.
				if rules, ok := call.Args[1].(*ast.CallExpr); ok {
					found = found || isSelector(rules.Fun, imports, pkg, "Rules")
				}
				return true
			})
			if found {
				return true
			}
		}
	}
	return false
}

// isSelector reports whether e is pkg.name, pkg named as f imports it.
func isSelector(e ast.Expr, imports map[string]string, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && imports[id.Name] == pkg
}

// TestCellsAgreeWithReach: the cells the kit probes are exactly the tiers
// floors.Reach grants each shipped kind (for a route wired for that tier)
// within the backend's ceiling and above the kind's origin floor, so the
// kit and the rules engine cannot drift apart.
func TestCellsAgreeWithReach(t *testing.T) {
	for _, b := range Backends {
		want := map[tenancytest.Cell]bool{}
		for kind, rule := range b.Kinds {
			floor, err := rule.Origin.Floor()
			if rule.Fleet || err != nil {
				continue
			}
			for _, tier := range []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated} {
				if tier <= b.Ceiling && tier >= floor && floors.Reach(rule, routeFor(rule, kind, tier)) == tier {
					want[tenancytest.Cell{Kind: kind, Tier: tier}] = true
				}
			}
		}
		got := tenancytest.Cells(b)
		for _, c := range got {
			if !want[c] {
				t.Errorf("%s: the kit probes %s, which no route reaches under the rules", b.Name, c)
			}
			delete(want, c)
		}
		for c := range want {
			t.Errorf("%s: the rules reach %s, but the kit does not probe it", b.Name, c)
		}
	}
}

// routeFor is the route of kind wired the way tier asks: tenant-aware over
// scoped relations for tagged; a per-tenant resolver on every counted
// relation for namespace (tenant-aware too where the resolver counts only
// then); a routed client for dedicated.
func routeFor(rule floors.KindRule, kind floors.Kind, tier tenancy.Tier) floors.Route {
	roles := rule.Relations
	if len(roles) == 0 {
		roles = []string{"relation"}
	}
	r := floors.Route{Name: "probe", Kind: kind}
	for _, role := range roles {
		r.Relations = append(r.Relations, floors.Relation{Role: role, Name: role,
			PerTenant: tier == tenancy.Namespace, Scoped: tier == tenancy.Tagged})
	}
	switch tier {
	case tenancy.Tagged:
		r.TenantAware = true
	case tenancy.Namespace:
		r.TenantAware = rule.ResolverCountsOnlyWhenTenantAware
	case tenancy.Dedicated:
		r.Routed = true
	}
	return r
}
