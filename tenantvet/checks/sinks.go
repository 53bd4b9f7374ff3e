package checks

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// sink is a function of this package that passes one of its context
// parameters on to a route: calling it with a lost context loses the
// tenant as surely as calling the route.
type sink struct {
	index int    // the context parameter's index among the call's arguments
	route string // the route it reaches, for the diagnostic
}

// findSinks finds the package's sinks, to a fixed point so that a helper
// calling a helper counts. It follows the package's own functions only.
func (s *state) findSinks() {
	s.sinks = map[*types.Func]sink{}
	type decl struct {
		fn     *types.Func
		fd     *ast.FuncDecl
		params []*types.Var
	}
	var decls []decl
	for _, f := range s.pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || s.bindsTenant(fd.Body) {
				continue // one that binds a tenant itself needs none from its caller
			}
			fn, _ := s.pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if fn == nil {
				continue
			}
			var params []*types.Var
			sig := fn.Type().(*types.Signature)
			for i := 0; i < sig.Params().Len(); i++ {
				params = append(params, sig.Params().At(i))
			}
			decls = append(decls, decl{fn, fd, params})
		}
	}
	for changed, round := true, 0; changed && round < 10; round++ {
		changed = false
		for _, d := range decls {
			if _, done := s.sinks[d.fn]; done {
				continue
			}
			ast.Inspect(d.fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				desc, ctx, ok := s.tenantCall(call)
				if !ok {
					return true
				}
				if fn, _ := typeutil.Callee(s.pass.TypesInfo, call).(*types.Func); fn != nil {
					if k, ok := s.sinks[fn.Origin()]; ok {
						desc = k.route // name the route at the end of the chain
					}
				}
				for i, p := range d.params {
					if isContext(p.Type()) && s.fromVar(ctx, p, 0) {
						s.sinks[d.fn] = sink{index: i, route: desc}
						changed = true
						return false
					}
				}
				return true
			})
		}
	}
}

// fromVar reports whether e may hold v or a context derived from it.
func (s *state) fromVar(e ast.Expr, v *types.Var, depth int) bool {
	if depth > 8 {
		return false
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		u, _ := s.pass.TypesInfo.Uses[e].(*types.Var)
		if u == v {
			return true
		}
		if u == nil || s.params[u] {
			return false
		}
		for _, val := range s.assigns[u] {
			if val.index <= 0 && s.fromVar(val.expr, v, depth+1) {
				return true
			}
		}
	case *ast.CallExpr:
		if calleeIs(s.pass.TypesInfo, e, "context", derivers...) && len(e.Args) > 0 {
			return s.fromVar(e.Args[0], v, depth+1)
		}
	}
	return false
}

// tenantCall resolves call to what needs a tenant: a route method, or a
// sink of this package. desc names it for a diagnostic.
func (s *state) tenantCall(call *ast.CallExpr) (desc string, ctx ast.Expr, ok bool) {
	if fn, ctx, ok := s.routeCall(call); ok {
		return routeName(fn), ctx, true
	}
	fn, _ := typeutil.Callee(s.pass.TypesInfo, call).(*types.Func)
	if fn == nil {
		return "", nil, false
	}
	if k, ok := s.sinks[fn.Origin()]; ok && k.index < len(call.Args) {
		return fn.Name() + " (which passes it to " + k.route + ")", call.Args[k.index], true
	}
	return "", nil, false
}
