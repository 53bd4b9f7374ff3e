//go:build ignore

// mutatesum summarises one gremlins JSON report for scripts/mutate.sh:
// one "mutation <package> killed=K ..." line on stdout and one
// "lived <file>:<line>:<col> <mutator>" line per survivor on stderr.
// usage: go run scripts/mutatesum.go <package dir> <report.json>
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
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
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutatesum:", err)
		os.Exit(1)
	}
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		fmt.Fprintf(os.Stderr, "mutatesum: %s: %v\n", file, err)
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
