package checks

import (
	"go/ast"

	"golang.org/x/tools/go/analysis"
)

// GoNoTenant reports a goroutine that calls a route without the tenant of
// the function that started it.
var GoNoTenant = &analysis.Analyzer{
	Name: nameGoNoTenant,
	Doc: `report goroutines that call tenantwire routes without their tenant

In a function with an incoming context (a context.Context parameter, or an
*http.Request), a go statement, errgroup.Group.Go/TryGo, sync.WaitGroup.Go
or time.AfterFunc callback that calls a route with a context not derived
from the incoming one (context.Background(), a stored context) runs with no
tenant: the call fails closed with tenant_unbound. Escape:
//tenantvet:ignore gonotenant <reason>.`,
	Run: runGoNoTenant,
}

func runGoNoTenant(pass *analysis.Pass) (any, error) {
	s := newState(pass)
	r := newReporter(pass, nameGoNoTenant)
	s.funcs(func(fd *ast.FuncDecl) {
		owned := s.owned(fd)
		check := func(call *ast.CallExpr, in string) {
			desc, ctx, ok := s.tenantCall(call)
			if !ok {
				return
			}
			if why, lost := s.lost(ctx); lost {
				r.report(ctx.Pos(), "a goroutine calls %s with %s instead of the incoming %s: the tenant does not follow it and the call fails closed with tenant_unbound; pass %s (context.WithoutCancel(%s) when the goroutine outlives the request)", desc, why, in, in, in)
			}
		}
		seen := map[*ast.CallExpr]bool{}
		inspect(fd, func(n ast.Node, funcs []ast.Node) {
			lit, direct := s.spawned(n)
			if direct != nil {
				if in, ok := s.incomingOf(funcs); ok {
					check(direct, in)
				}
				return
			}
			in := owned[lit]
			if lit == nil || in == "" {
				return
			}
			ast.Inspect(lit.Body, func(m ast.Node) bool {
				if c, ok := m.(*ast.CallExpr); ok && !seen[c] {
					seen[c] = true
					check(c, in)
				}
				return true
			})
		})
	})
	return nil, nil
}
