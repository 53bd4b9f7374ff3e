//go:build ignore

// mutatesum summarises one gremlins JSON report for scripts/mutate.sh:
// one "mutation <package> killed=K ..." line on stdout and one
// "lived <file>:<line>:<col> <mutator>" line per survivor on stderr.
// usage: go run scripts/mutatesum.go <package dir> <report.json>
//
// Gremlins v0.6.0 judges a mutant by go test's exit status, which is 1 for
// a build failure as for a failing test, so a mutant that cannot compile
// (a string concatenation turned into a subtraction) is reported killed.
// The package is type-checked here and such mutants are counted not_viable.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

type report struct {
	Files []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/mutatesum.go <package dir> <report.json>")
		os.Exit(2)
	}
	pkg, file := os.Args[1], os.Args[2]
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = []byte("{}"), nil // no mutant in the package
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutatesum:", err)
		os.Exit(1)
	}
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		fmt.Fprintf(os.Stderr, "mutatesum: %s: %v\n", file, err)
		os.Exit(1)
	}
	strAdd, err := stringAdditions(pkg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mutatesum: type-checking %s: %v\n", pkg, err)
		os.Exit(1)
	}
	counts := map[string]int{}
	type pos struct {
		file      string
		line, col int
		typ       string
	}
	var lived []pos
	for _, f := range r.Files {
		for _, m := range f.Mutations {
			if m.Type == "ARITHMETIC_BASE" && strAdd[fmt.Sprintf("%s:%d:%d", f.Name, m.Line, m.Column)] {
				m.Status = "NOT VIABLE"
			}
			counts[m.Status]++
			if m.Status == "LIVED" {
				lived = append(lived, pos{path.Join(pkg, f.Name), m.Line, m.Column, m.Type})
			}
		}
	}
	sort.Slice(lived, func(i, j int) bool {
		a, b := lived[i], lived[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return a.col < b.col
	})
	fmt.Printf("mutation %s killed=%d lived=%d timed_out=%d not_covered=%d not_viable=%d\n",
		pkg, counts["KILLED"], counts["LIVED"], counts["TIMED OUT"], counts["NOT COVERED"], counts["NOT VIABLE"])
	for _, l := range lived {
		fmt.Fprintf(os.Stderr, "lived %s:%d:%d %s\n", l.file, l.line, l.col, l.typ)
	}
}

// stringAdditions returns the positions (file:line:col, file relative to
// dir) of every binary '+' on strings in the package in dir.
func stringAdditions(dir string) (map[string]bool, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range pkgs {
		var files []*ast.File
		for _, f := range p.Files {
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
		if _, err := conf.Check(p.Name, fset, files, info); err != nil {
			return nil, err
		}
		for expr, tv := range info.Types {
			b, ok := expr.(*ast.BinaryExpr)
			if !ok || b.Op != token.ADD {
				continue
			}
			if t, ok := tv.Type.Underlying().(*types.Basic); ok && t.Info()&types.IsString != 0 {
				pos := fset.Position(b.OpPos)
				out[fmt.Sprintf("%s:%d:%d", filepath.Base(pos.Filename), pos.Line, pos.Column)] = true
			}
		}
	}
	return out, nil
}
