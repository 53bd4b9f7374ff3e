package checks

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// TenantSQL reports a tenant id written into statement text.
var TenantSQL = &analysis.Analyzer{
	Name: nameTenantSQL,
	Doc: `report a tenancy.ID written into the text of a statement

The routes that take statement text (postgres.DynamicRead.Query,
neo4j.RawCypher.Read/Write) scope it to the tenant bound in ctx. A tenant
id put into the text itself (fmt.Sprintf, +, strings.Builder, from a
tenancy.ID or its String()/Hex()) is a second tenant predicate nothing
checks: it can name another tenant than the bound one. Pass values as
parameters and leave the tenant to the route. Escape:
//tenantvet:ignore tenantsql <reason>.`,
	Run: runTenantSQL,
}

// statementArg gives, per route method, the index of its statement text.
var statementArg = map[string]int{
	module + "/adapters/postgres.DynamicRead.Query": 1,
	module + "/adapters/neo4j.RawCypher.Read":       1,
	module + "/adapters/neo4j.RawCypher.Write":      1,
}

func statementIndex(fn *types.Func) (int, bool) {
	fn = fn.Origin()
	t := fn.Type().(*types.Signature).Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return 0, false
	}
	i, ok := statementArg[fn.Pkg().Path()+"."+n.Obj().Name()+"."+fn.Name()]
	return i, ok
}

func isID(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == tenancyPath && n.Obj().Name() == "ID"
}

type taint struct {
	s        *state
	builders map[*types.Var]string // builder -> how a tenant id reached it
}

func runTenantSQL(pass *analysis.Pass) (any, error) {
	s := newState(pass)
	r := newReporter(pass, nameTenantSQL)
	tt := &taint{s: s, builders: map[*types.Var]string{}}
	info := pass.TypesInfo
	// Builders first: a tenant id written into one taints its String().
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if calleeIs(info, call, "fmt", "Fprintf", "Fprint", "Fprintln") && len(call.Args) > 1 {
				if v := tt.builderVar(call.Args[0]); v != nil {
					for _, a := range call.Args[1:] {
						if why, ok := tt.tainted(a, 0); ok {
							tt.builders[v] = why
						}
					}
				}
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && len(call.Args) == 1 {
				if v := tt.builderVar(sel.X); v != nil && (sel.Sel.Name == "WriteString" || sel.Sel.Name == "Write") {
					if why, ok := tt.tainted(call.Args[0], 0); ok {
						tt.builders[v] = why
					}
				}
			}
			return true
		})
	}
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue // tests write foreign tenants into statements on purpose
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, _, ok := s.routeCall(call)
			if !ok {
				return true
			}
			i, ok := statementIndex(fn)
			if !ok || i >= len(call.Args) {
				return true
			}
			if why, ok := tt.tainted(call.Args[i], 0); ok {
				r.report(call.Args[i].Pos(), "the statement text passed to %s is built from a tenancy.ID (%s): the route scopes the statement to the tenant bound in ctx, and a tenant id in the text is a second predicate nothing checks, which can name another tenant; drop it from the text and pass values as parameters", routeName(fn), why)
			}
			return true
		})
	}
	return nil, nil
}

// builderVar returns the strings.Builder or bytes.Buffer variable e
// names (b or &b).
func (tt *taint) builderVar(e ast.Expr) *types.Var {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = ast.Unparen(u.X)
	}
	id, ok := e.(*ast.Ident)
	if !ok {
		return nil
	}
	v, _ := tt.s.pass.TypesInfo.ObjectOf(id).(*types.Var)
	if v == nil {
		return nil
	}
	t := v.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil {
		switch n.Obj().Pkg().Path() + "." + n.Obj().Name() {
		case "strings.Builder", "bytes.Buffer":
			return v
		}
	}
	return nil
}

// tainted reports whether e's value holds a tenant id, and how.
func (tt *taint) tainted(e ast.Expr, depth int) (string, bool) {
	if depth > 8 {
		return "", false
	}
	info := tt.s.pass.TypesInfo
	e = ast.Unparen(e)
	if isID(info.TypeOf(e)) {
		return "a tenancy.ID value", true
	}
	switch e := e.(type) {
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			for _, x := range []ast.Expr{e.X, e.Y} {
				if why, ok := tt.tainted(x, depth+1); ok {
					if !strings.HasPrefix(why, "+ with ") {
						why = "+ with " + why
					}
					return why, true
				}
			}
		}
	case *ast.CallExpr:
		if calleeIs(info, e, "fmt", "Sprintf", "Sprint", "Sprintln") {
			for _, a := range e.Args {
				if why, ok := tt.tainted(a, depth+1); ok {
					return "fmt." + typeutil.Callee(info, e).Name() + " with " + why, true
				}
			}
		}
		if calleeIs(info, e, "strings", "Join", "Repeat") && len(e.Args) > 0 {
			return tt.tainted(e.Args[0], depth+1)
		}
		if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok {
			if isID(info.TypeOf(sel.X)) && (sel.Sel.Name == "String" || sel.Sel.Name == "Hex") {
				return "tenancy.ID." + sel.Sel.Name + "()", true
			}
			if v := tt.builderVar(sel.X); v != nil && sel.Sel.Name == "String" {
				if why, ok := tt.builders[v]; ok {
					return "a strings.Builder fed " + why, true
				}
			}
		}
		if tv, ok := info.Types[e.Fun]; ok && tv.IsType() && len(e.Args) == 1 {
			return tt.tainted(e.Args[0], depth+1) // string(b), []byte(s)
		}
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			if why, ok := tt.tainted(el, depth+1); ok {
				return why, true
			}
		}
	case *ast.Ident:
		v, ok := info.Uses[e].(*types.Var)
		if !ok {
			return "", false
		}
		for _, val := range tt.s.assigns[v] {
			if val.index >= 0 {
				continue
			}
			if why, ok := tt.tainted(val.expr, depth+1); ok {
				return why, true
			}
		}
	}
	return "", false
}
