package checks

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// funcs visits every function declaration with a body in the package's
// non-test files, outside package main (where a program binds its own
// tenants) and outside functions that bind a tenant themselves.
func (s *state) funcs(visit func(fd *ast.FuncDecl)) {
	if s.pass.Pkg.Name() == "main" {
		return
	}
	for _, f := range s.pass.Files {
		if isTestFile(s.pass, f) {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || s.bindsTenant(fd.Body) {
				continue
			}
			visit(fd)
		}
	}
}

// inspect walks root calling visit with each node and the functions
// (*ast.FuncDecl, *ast.FuncLit) enclosing it, innermost last.
func inspect(root ast.Node, visit func(n ast.Node, funcs []ast.Node)) {
	var stack []ast.Node
	var funcs []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if len(funcs) > 0 && funcs[len(funcs)-1] == top {
				funcs = funcs[:len(funcs)-1]
			}
			return false
		}
		visit(n, funcs)
		stack = append(stack, n)
		switch n.(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			funcs = append(funcs, n)
		}
		return true
	})
}

func funcType(n ast.Node) *ast.FuncType {
	switch n := n.(type) {
	case *ast.FuncDecl:
		return n.Type
	case *ast.FuncLit:
		return n.Type
	}
	return nil
}

// incomingOf names the incoming context of the innermost enclosing
// function that has one.
func (s *state) incomingOf(funcs []ast.Node) (string, bool) {
	for i := len(funcs) - 1; i >= 0; i-- {
		if name, ok := s.incoming(funcType(funcs[i])); ok {
			return name, true
		}
	}
	return "", false
}

// spawned returns the function that n starts apart from its caller: the
// literal of a go statement, of errgroup.Group.Go/TryGo and
// sync.WaitGroup.Go, and time.AfterFunc's callback; and, for `go r.M(...)`,
// the call itself.
func (s *state) spawned(n ast.Node) (lit *ast.FuncLit, call *ast.CallExpr) {
	switch n := n.(type) {
	case *ast.GoStmt:
		if l, ok := ast.Unparen(n.Call.Fun).(*ast.FuncLit); ok {
			return l, nil
		}
		return nil, n.Call
	case *ast.CallExpr:
		var arg ast.Expr
		if calleeIs(s.pass.TypesInfo, n, "time", "AfterFunc") && len(n.Args) == 2 {
			arg = n.Args[1]
		} else if fn, _ := typeutil.Callee(s.pass.TypesInfo, n).(*types.Func); fn != nil && len(n.Args) == 1 && spawner(fn) {
			arg = n.Args[0]
		}
		if l, ok := ast.Unparen(arg).(*ast.FuncLit); ok && arg != nil {
			return l, nil
		}
	}
	return nil, nil
}

func spawner(fn *types.Func) bool {
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil || sig.Recv() == nil || fn.Pkg() == nil {
		return false
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok {
		return false
	}
	switch fn.Pkg().Path() + "." + n.Obj().Name() + "." + fn.Name() {
	case "golang.org/x/sync/errgroup.Group.Go", "golang.org/x/sync/errgroup.Group.TryGo", "sync.WaitGroup.Go":
		return true
	}
	return false
}

// owned returns the spawned literals gonotenant judges: those started by
// a function with an incoming context, mapped to that context's name.
func (s *state) owned(fd *ast.FuncDecl) map[*ast.FuncLit]string {
	out := map[*ast.FuncLit]string{}
	inspect(fd, func(n ast.Node, funcs []ast.Node) {
		if lit, _ := s.spawned(n); lit != nil {
			if name, ok := s.incomingOf(funcs); ok {
				out[lit] = name
			}
		}
	})
	return out
}
