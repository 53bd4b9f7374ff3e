package checks

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

const (
	module      = "github.com/tenantwire/tenantwire"
	tenancyPath = module + "/tenancy"
)

// routePackage reports whether path declares route types or the
// interfaces routes satisfy: the adapters, capability, document, outbox.
func routePackage(path string) bool {
	return strings.HasPrefix(path, module+"/adapters/") ||
		path == module+"/capability" || path == module+"/document" || path == module+"/outbox"
}

// routeMethod reports whether fn is a route method: an exported method
// whose first parameter is a context.Context, declared on a type (or an
// interface) of a route package. Generic methods are judged by origin.
func routeMethod(fn *types.Func) bool {
	if fn == nil || !fn.Exported() {
		return false
	}
	fn = fn.Origin()
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || fn.Pkg() == nil || !routePackage(fn.Pkg().Path()) {
		return false
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); !ok || !n.Obj().Exported() {
		return false // an adapter's own plumbing (neo4j's driver), not a route
	}
	return sig.Params().Len() > 0 && isContext(sig.Params().At(0).Type())
}

func isContext(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

// routeCall resolves call to a route method and the argument that is its
// context. Direct calls, calls through interfaces and type parameters,
// method expressions ((*T).M(recv, ctx, ...)) and local method values
// (m := r.M; m(ctx, ...)) count.
func (s *state) routeCall(call *ast.CallExpr) (*types.Func, ast.Expr, bool) {
	info := s.pass.TypesInfo
	fun := ast.Unparen(call.Fun)
	if sel, ok := fun.(*ast.SelectorExpr); ok {
		if sl := info.Selections[sel]; sl != nil && sl.Kind() == types.MethodExpr {
			fn, _ := sl.Obj().(*types.Func)
			if routeMethod(fn) && len(call.Args) > 1 {
				return fn, call.Args[1], true
			}
			return nil, nil, false
		}
	}
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	if fn == nil {
		if id, ok := fun.(*ast.Ident); ok {
			if v, ok := info.Uses[id].(*types.Var); ok {
				fn = s.methodVals[v]
			}
		}
	}
	if routeMethod(fn) && len(call.Args) > 0 {
		return fn, call.Args[0], true
	}
	return nil, nil, false
}

// routeName names fn as a reader knows it: postgres.Counter.Add.
func routeName(fn *types.Func) string {
	fn = fn.Origin()
	sig := fn.Type().(*types.Signature)
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Pkg().Name() + "." + n.Obj().Name() + "." + fn.Name()
	}
	return fn.Pkg().Name() + "." + fn.Name()
}

// calleeIs reports whether call calls the package-level function
// pkgPath.name.
func calleeIs(info *types.Info, call *ast.CallExpr, pkgPath string, names ...string) bool {
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != pkgPath {
		return false
	}
	if sig, _ := fn.Type().(*types.Signature); sig == nil || sig.Recv() != nil {
		return false
	}
	for _, n := range names {
		if fn.Name() == n {
			return true
		}
	}
	return false
}

// isTestFile reports whether f is a _test.go file.
func isTestFile(pass *analysis.Pass, f *ast.File) bool {
	return strings.HasSuffix(pass.Fset.Position(f.Pos()).Filename, "_test.go")
}
