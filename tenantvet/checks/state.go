package checks

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// state is what the checks learn of one package before judging calls.
// The analysis is flow-insensitive: a variable is judged by every value
// assigned to it anywhere, so a check reports only what is lost on every
// path (precision over recall: a finding is a review comment, not a hunch).
type state struct {
	pass *analysis.Pass
	// methodVals maps a variable to the method value bound to it.
	methodVals map[*types.Var]*types.Func
	// assigns maps a local variable to the values assigned to it; a tuple
	// assignment records the call and the variable's index in it.
	assigns map[*types.Var][]value
	params  map[*types.Var]bool
	// sinks are the package's functions that pass a context on to a route.
	sinks map[*types.Func]sink
}

type value struct {
	expr  ast.Expr
	index int // position in a tuple result, -1 for a single value
}

func newState(pass *analysis.Pass) *state {
	s := &state{
		pass:       pass,
		methodVals: map[*types.Var]*types.Func{},
		assigns:    map[*types.Var][]value{},
		params:     map[*types.Var]bool{},
	}
	info := pass.TypesInfo
	record := func(lhs ast.Expr, v value) {
		id, ok := ast.Unparen(lhs).(*ast.Ident)
		if !ok {
			return
		}
		obj, _ := info.ObjectOf(id).(*types.Var)
		if obj == nil {
			return
		}
		s.assigns[obj] = append(s.assigns[obj], v)
		if sel, ok := ast.Unparen(v.expr).(*ast.SelectorExpr); ok && v.index < 0 {
			if sl := info.Selections[sel]; sl != nil && sl.Kind() == types.MethodVal {
				if fn, ok := sl.Obj().(*types.Func); ok {
					s.methodVals[obj] = fn
				}
			}
		}
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE && n.Tok != token.ASSIGN && n.Tok != token.ADD_ASSIGN {
					return true
				}
				if len(n.Lhs) == len(n.Rhs) {
					for i := range n.Lhs {
						record(n.Lhs[i], value{n.Rhs[i], -1})
					}
				} else if len(n.Rhs) == 1 {
					for i := range n.Lhs {
						record(n.Lhs[i], value{n.Rhs[0], i})
					}
				}
			case *ast.ValueSpec:
				if len(n.Names) == len(n.Values) {
					for i := range n.Names {
						record(n.Names[i], value{n.Values[i], -1})
					}
				} else if len(n.Values) == 1 {
					for i := range n.Names {
						record(n.Names[i], value{n.Values[0], i})
					}
				}
			case *ast.FuncType:
				for _, fl := range []*ast.FieldList{n.Params, n.Results} {
					if fl == nil {
						continue
					}
					for _, fd := range fl.List {
						for _, nm := range fd.Names {
							if v, ok := info.Defs[nm].(*types.Var); ok {
								s.params[v] = true
							}
						}
					}
				}
			}
			return true
		})
	}
	s.findSinks()
	return s
}

// derivers return a context derived from their first argument.
var derivers = []string{"WithCancel", "WithCancelCause", "WithDeadline", "WithDeadlineCause",
	"WithTimeout", "WithTimeoutCause", "WithValue", "WithoutCancel"}

// lost reports whether e is a context that carries no tenant on any path,
// and why, in words for the diagnostic. context.WithoutCancel keeps the
// parent's values, the tenant among them, so it loses only what its
// parent lost.
func (s *state) lost(e ast.Expr) (string, bool) { return s.lostDepth(e, -1, 0) }

func (s *state) lostDepth(e ast.Expr, index, depth int) (string, bool) {
	if depth > 8 {
		return "", false
	}
	info := s.pass.TypesInfo
	e = ast.Unparen(e)
	switch e := e.(type) {
	case *ast.CallExpr:
		if index > 0 {
			return "", false // the cancel func of ctx, cancel := ...
		}
		switch {
		case calleeIs(info, e, "context", "Background"):
			return "context.Background()", true
		case calleeIs(info, e, "context", "TODO"):
			return "context.TODO()", true
		case calleeIs(info, e, "context", derivers...) && len(e.Args) > 0:
			return s.lostDepth(e.Args[0], -1, depth+1)
		}
		return "", false
	case *ast.SelectorExpr:
		if sl := info.Selections[e]; sl != nil {
			if sl.Kind() == types.FieldVal && isContext(sl.Obj().Type()) {
				return "the context stored in field " + sl.Obj().Name(), true
			}
			return "", false
		}
		if v, ok := info.Uses[e.Sel].(*types.Var); ok && isContext(v.Type()) && packageLevel(v) {
			return "the package-level context " + e.Sel.Name, true
		}
	case *ast.Ident:
		v, ok := info.Uses[e].(*types.Var)
		if !ok || !isContext(v.Type()) {
			return "", false
		}
		if packageLevel(v) {
			return "the package-level context " + v.Name(), true
		}
		vals := s.assigns[v]
		if s.params[v] || len(vals) == 0 {
			return "", false
		}
		var why string
		for _, val := range vals {
			w, ok := s.lostDepth(val.expr, val.index, depth+1)
			if !ok {
				return "", false
			}
			if why == "" {
				why = w
			}
		}
		return v.Name() + " (" + why + ")", true
	}
	return "", false
}

func packageLevel(v *types.Var) bool {
	return v.Pkg() != nil && v.Parent() == v.Pkg().Scope()
}

// bindsTenant reports whether body binds a tenant itself.
func (s *state) bindsTenant(body ast.Node) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && calleeIs(s.pass.TypesInfo, c, tenancyPath, "WithTenant", "WithGlobal") {
			found = true
		}
		return !found
	})
	return found
}

// incoming names the incoming context of a function type: its first
// context.Context parameter, or r.Context() of an *http.Request r.
func (s *state) incoming(ft *ast.FuncType) (string, bool) {
	if ft == nil || ft.Params == nil {
		return "", false
	}
	for _, fd := range ft.Params.List {
		t := s.pass.TypesInfo.TypeOf(fd.Type)
		for _, nm := range fd.Names {
			if isContext(t) {
				return nm.Name, true
			}
			if p, ok := t.(*types.Pointer); ok {
				if n, ok := p.Elem().(*types.Named); ok && n.Obj().Pkg() != nil &&
					n.Obj().Pkg().Path() == "net/http" && n.Obj().Name() == "Request" {
					return nm.Name + ".Context()", true
				}
			}
		}
	}
	return "", false
}
