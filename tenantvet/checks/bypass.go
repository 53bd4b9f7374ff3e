package checks

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// Bypass reports the driver client handed to tenantwire used directly.
var Bypass = &analysis.Analyzer{
	Name: nameBypass,
	Doc: `report a driver client handed to tenantwire and also used directly

postgres.Use(pool), redis.Use(client), mongo.Use(client) and
neo4j.Use(driver) hand tenantwire the driver client its routes run on. A
read or write on that same client elsewhere in the package has no tenant
predicate, schema, floor or telemetry: it reaches every tenant's data.
Only the same variable (local, or package-level anywhere in the package)
is followed; a client passed on to another package or stored in a field is
not. Lifecycle calls (Close, Ping, Stat, ...) are not reported, nor are
tests. Escape: //tenantvet:ignore bypass <reason>.`,
	Run: runBypass,
}

// lifecycle methods of the drivers' clients touch no tenant's data.
var lifecycle = map[string]bool{
	"Close": true, "Ping": true, "Stat": true, "Config": true, "Reset": true,
	"Options": true, "PoolStats": true, "Disconnect": true, "VerifyConnectivity": true,
	"VerifyAuthentication": true, "GetServerInfo": true, "AddHook": true, "String": true,
}

var usePackages = []string{"postgres", "redis", "mongo", "neo4j"}

func runBypass(pass *analysis.Pass) (any, error) {
	r := newReporter(pass, nameBypass)
	info := pass.TypesInfo
	handed := map[*types.Var]string{}
	varOf := func(e ast.Expr) *types.Var {
		switch e := ast.Unparen(e).(type) {
		case *ast.Ident:
			v, _ := info.Uses[e].(*types.Var)
			return v
		case *ast.SelectorExpr:
			if info.Selections[e] == nil { // pkg.Var, not a field
				v, _ := info.Uses[e.Sel].(*types.Var)
				return v
			}
		}
		return nil
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			for _, p := range usePackages {
				if calleeIs(info, call, module+"/adapters/"+p, "Use") {
					if v := varOf(call.Args[0]); v != nil {
						handed[v] = p
					}
				}
			}
			return true
		})
	}
	if len(handed) == 0 {
		return nil, nil
	}
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok || lifecycle[sel.Sel.Name] {
				return true
			}
			if s := info.Selections[sel]; s == nil || s.Kind() != types.MethodVal {
				return true
			}
			v := varOf(sel.X)
			if p, ok := handed[v]; ok {
				r.report(call.Pos(), "%s is handed to %s.Use and also used directly (%s.%s): the driver client bypasses the tenant routes (no tenant predicate, schema or floor) and reaches every tenant's data; use a tenantwire route (a raw hatch for hand-written statements) instead", v.Name(), p, v.Name(), sel.Sel.Name)
			}
			return true
		})
	}
	return nil, nil
}
