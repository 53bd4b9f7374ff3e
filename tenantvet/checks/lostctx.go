package checks

import (
	"go/ast"

	"golang.org/x/tools/go/analysis"
)

// LostCtx reports a route called with a context that carries no tenant.
var LostCtx = &analysis.Analyzer{
	Name: nameLostCtx,
	Doc: `report tenantwire routes called with a context that carries no tenant

A route method (a method taking a context.Context first, on a type or
interface of tenantwire's adapters, capability, document or outbox) called
with context.Background(), context.TODO(), a context stored in a struct
field or a package-level variable, or a context derived only from those,
fails closed at run time with tenant_unbound. Package main, tests and
functions that bind a tenant themselves (tenancy.WithTenant/WithGlobal) are
not judged. Escape: //tenantvet:ignore lostctx <reason>.`,
	Run: runLostCtx,
}

func runLostCtx(pass *analysis.Pass) (any, error) {
	reportUnknownIgnores(pass)
	s := newState(pass)
	r := newReporter(pass, nameLostCtx)
	s.funcs(func(fd *ast.FuncDecl) {
		owned := s.owned(fd)
		skip := map[*ast.CallExpr]bool{}
		inspect(fd, func(n ast.Node, funcs []ast.Node) {
			if g, ok := n.(*ast.GoStmt); ok {
				if _, in := s.incomingOf(funcs); in {
					skip[g.Call] = true // gonotenant's
				}
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || skip[call] {
				return
			}
			for _, f := range funcs {
				if lit, ok := f.(*ast.FuncLit); ok && owned[lit] != "" {
					return // gonotenant's
				}
			}
			desc, ctx, ok := s.tenantCall(call)
			if !ok {
				return
			}
			if why, lost := s.lost(ctx); lost {
				r.report(ctx.Pos(), "%s is called with %s, which carries no tenant: it fails closed with tenant_unbound; pass the function's incoming ctx (or a context derived from it)", desc, why)
			}
		})
	})
	return nil, nil
}
