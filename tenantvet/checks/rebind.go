package checks

import (
	"go/ast"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Rebind reports a tenant bound outside a boundary.
var Rebind = &analysis.Analyzer{
	Name: nameRebind,
	Doc: `report tenancy.WithTenant / WithGlobal outside a boundary

The boundary that authenticated a request binds its tenant (tenanthttp,
tenantgrpc, tenantwire's workers and relays); handler code that binds one
itself, usually from request data, lets the caller choose its tenant.
Package main, tests, tenantwire's own packages and the packages named by
-rebind.allow (comma-separated import paths; path/... takes the subtree)
are not judged. Escape: //tenantvet:ignore rebind <reason>.`,
	Run: runRebind,
}

var rebindAllow string

func init() {
	Rebind.Flags.StringVar(&rebindAllow, "allow", "", "comma-separated import paths (path/... for a subtree) of packages that are boundaries")
}

// boundary reports whether path may bind tenants: tenantwire's own
// packages (its boundaries, workers and relays) and the allowlist.
func boundary(path, allow string) bool {
	if (path == module || strings.HasPrefix(path, module+"/")) && !strings.HasPrefix(path, module+"/examples/") {
		return true
	}
	for _, a := range strings.Split(allow, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if sub, ok := strings.CutSuffix(a, "/..."); ok {
			if path == sub || strings.HasPrefix(path, sub+"/") {
				return true
			}
		} else if path == a {
			return true
		}
	}
	return false
}

func runRebind(pass *analysis.Pass) (any, error) {
	r := newReporter(pass, nameRebind)
	if pass.Pkg.Name() == "main" || boundary(pass.Pkg.Path(), rebindAllow) {
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
			for _, name := range []string{"WithTenant", "WithGlobal"} {
				if calleeIs(pass.TypesInfo, call, tenancyPath, name) {
					r.report(call.Pos(), "tenancy.%s outside a boundary: the boundary that authenticated the request binds its tenant (tenanthttp, tenantgrpc, a tenantwire worker), and a tenant bound from request data is one the caller chose; pass the incoming ctx on, or add %s to -rebind.allow if it is a boundary", name, pass.Pkg.Path())
				}
			}
			return true
		})
	}
	return nil, nil
}
