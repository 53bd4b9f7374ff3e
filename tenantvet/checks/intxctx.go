package checks

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// InTxOuterCtx reports a route called inside an InTx callback with the
// context from outside it.
var InTxOuterCtx = &analysis.Analyzer{
	Name: nameInTxOuterCtx,
	Doc: `report a route called inside postgres.Client.InTx's callback with the outer context

InTx(ctx, func(ctx context.Context) error {...}) runs the callback's route
calls in one transaction, the unit of work carried by the callback's
context. A route called there with the outer context (the one InTx was
given, or any context from outside the callback) runs apart: it neither
sees the unit's writes nor rolls back with it. Escape:
//tenantvet:ignore intxctx <reason> where running apart is meant.`,
	Run: runInTxOuterCtx,
}

func runInTxOuterCtx(pass *analysis.Pass) (any, error) {
	s := newState(pass)
	r := newReporter(pass, nameInTxOuterCtx)
	info := pass.TypesInfo
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue // tests run apart on purpose, to assert what that does
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			fn, _, ok := s.routeCall(call)
			if !ok || !isInTx(fn) {
				return true
			}
			lit, ok := ast.Unparen(call.Args[1]).(*ast.FuncLit)
			if !ok || len(lit.Type.Params.List) != 1 || len(lit.Type.Params.List[0].Names) != 1 {
				return true
			}
			inner := lit.Type.Params.List[0].Names[0]
			ast.Inspect(lit.Body, func(m ast.Node) bool {
				c, ok := m.(*ast.CallExpr)
				if !ok {
					return true
				}
				desc, ctx, ok := s.tenantCall(c)
				if !ok {
					return true
				}
				id, ok := ast.Unparen(ctx).(*ast.Ident)
				if !ok {
					return true
				}
				v, ok := info.Uses[id].(*types.Var)
				if !ok || !isContext(v.Type()) || v.Pos() >= lit.Pos() && v.Pos() < lit.End() {
					return true // the callback's own context, or one derived inside it
				}
				r.report(ctx.Pos(), "%s inside the InTx callback is called with the outer context %s, not the callback's %s: it runs apart from the unit of work (it neither sees its writes nor rolls back with it); pass %s", desc, id.Name, inner.Name, inner.Name)
				return true
			})
			return true
		})
	}
	return nil, nil
}

func isInTx(fn *types.Func) bool {
	return fn.Name() == "InTx" && fn.Pkg().Path() == module+"/adapters/postgres"
}
