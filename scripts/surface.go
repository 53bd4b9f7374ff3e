//go:build ignore

// surface counts the library's size and public surface, the figures the
// backend contract is held to: exported identifiers and exported struct
// fields in the public packages, non-test Go lines, and non-test
// functions over 80 lines (each listed).
// With -packages it also prints, per public package, its exported
// identifiers and its code lines (comments and blank lines excluded), and
// their totals: the figures counted per adapter.
// usage: go run scripts/surface.go [-packages] [repo root]
// (scripts/nontest-duplicates.sh counts the repeated code, the last figure.)
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// private holds what is not the public library: tests' helpers, examples,
// commands, the nested integration module, scripts, and testdata (the
// stub packages tenantvet's tests check).
func private(dir string) bool {
	if slices.Contains(strings.Split(dir, "/"), "testdata") {
		return true
	}
	for _, p := range []string{"internal", "examples", "cmd", "integration", "scripts"} {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}

func main() {
	root, perPkg := ".", false
	for _, a := range os.Args[1:] {
		if a == "-packages" {
			perPkg = true
		} else {
			root = a
		}
	}
	var idents, fields, lines int
	pkgIdents, pkgCode := map[string]int{}, map[string]int{}
	var long []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "integration" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(rel, "scripts/") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines += strings.Count(string(src), "\n")
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > 80 {
					long = append(long, fmt.Sprintf("%s:%d %s (%d lines)", rel, fset.Position(fn.Pos()).Line, fn.Name.Name, n))
				}
			}
		}
		if private(filepath.Dir(rel)) || f.Name.Name == "main" {
			return nil
		}
		pkg := filepath.Dir(rel)
		pkgCode[pkg] += codeLines(fset, f, src)
		before := idents
		defer func() { pkgIdents[pkg] += idents - before }()
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Name.IsExported() && (n.Recv == nil || exportedRecv(n.Recv)) {
					idents++
				}
				return false
			case *ast.TypeSpec:
				if n.Name.IsExported() {
					idents++
					if st, ok := n.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							for _, nm := range fl.Names {
								if nm.IsExported() {
									fields++
								}
							}
							if len(fl.Names) == 0 { // embedded
								if id := embeddedName(fl.Type); id != "" && ast.IsExported(id) {
									fields++
								}
							}
						}
					}
				}
				return false
			case *ast.ValueSpec:
				for _, nm := range n.Names {
					if nm.IsExported() {
						idents++
					}
				}
				return false
			}
			return true
		})
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sort.Strings(long)
	fmt.Printf("surface exported_identifiers=%d exported_fields=%d nontest_go_lines=%d functions_over_80_lines=%d\n", idents, fields, lines, len(long))
	for _, l := range long {
		fmt.Println("long", l)
	}
	if perPkg {
		pkgs := make([]string, 0, len(pkgCode))
		for p := range pkgCode {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		var ti, tc int
		for _, p := range pkgs {
			fmt.Printf("package %s exported_identifiers=%d code_lines=%d\n", p, pkgIdents[p], pkgCode[p])
			ti, tc = ti+pkgIdents[p], tc+pkgCode[p]
		}
		fmt.Printf("packages exported_identifiers=%d code_lines=%d\n", ti, tc)
	}
}

// codeLines counts f's lines that hold code: not blank, not only comment.
func codeLines(fset *token.FileSet, f *ast.File, src []byte) int {
	comment := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			for l := fset.Position(c.Pos()).Line; l <= fset.Position(c.End()).Line; l++ {
				comment[l] = true
			}
		}
	}
	n := 0
	for i, line := range strings.Split(string(src), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || comment[i+1] && (strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "*")) {
			continue
		}
		n++
	}
	return n
}

func exportedRecv(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	return ast.IsExported(embeddedName(r.List[0].Type))
}

// embeddedName is the type name behind pointers and type parameters.
func embeddedName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel.Name
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
