package tenancytest

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"unicode"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
)

// A library that registered the conventional -update flag would make every
// test binary that defines its own panic with "flag redefined: update", so
// this one is namespaced; a boolean -update the test package defines
// itself is honoured too.
var update = flag.Bool("tenancy.update", false, "rewrite the golden files of tenancytest.RequireMatrix")

func updating() bool {
	if *update {
		return true
	}
	if f := flag.Lookup("update"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			b, _ := g.Get().(bool)
			return b
		}
	}
	return false
}

// golden columns after module and route: what a reviewer must see change.
var goldenColumns = []string{"module", "route", "backend", "kind", "reached", "origin", "floor", "verdict"}

type goldenRow struct{ cells []string }

func (g goldenRow) key() string { return g.cells[0] + "/" + g.cells[1] }

func rowOf(r floors.Row) goldenRow {
	floor := r.Scope
	if floor == "" {
		floor = r.Declared.String()
	}
	return goldenRow{cells: []string{r.Module, r.Route, r.Backend, string(r.Kind),
		r.Reached.String(), r.Origin.String(), floor, r.Verdict}}
}

// RequireMatrix dry-runs the app built from opts (modules.DryRun: no
// constructor runs, no server is touched) and compares its tenancy matrix
// with the golden file at path, one line per route: backend, kind, the tier
// reached, the statement origin, the floor (declared, or fleet /
// tenant-global) and the verdict. It fails with a diff naming each route
// whose line changed, appeared or disappeared, so a change that weakens a
// route's isolation shows up as a failing test and a diff to review.
//
// Run the test with -tenancy.update (or a boolean -update flag of the test
// package's own) to write the file after an intended change. A refused app
// is compared like any other: its refused routes carry their code as
// verdict. An error that stops fx before the wiring is read fails the test.
func RequireMatrix(t testing.TB, path string, opts ...fx.Option) {
	t.Helper()
	rep, err := modules.DryRun(opts...)
	if err != nil && len(rep.Matrix.Rows) == 0 && len(rep.Errors) == 0 {
		t.Fatalf("tenancytest.RequireMatrix: %v", err)
	}
	got := make([]goldenRow, len(rep.Matrix.Rows))
	for i, r := range rep.Matrix.Rows {
		got[i] = rowOf(r)
	}
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, renderGolden(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("tenancytest.RequireMatrix: wrote %s (%d routes)", path, len(got))
		return
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("tenancytest.RequireMatrix: no golden file %s: run the test with -tenancy.update to write it", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := parseGolden(b)
	if err != nil {
		t.Fatalf("tenancytest.RequireMatrix: %s: %v", path, err)
	}
	if diff := diffMatrix(want, got); diff != "" {
		t.Fatalf("tenancy matrix differs from %s (- golden, + now); if the change is intended, rerun with -tenancy.update:\n%s", path, strings.TrimSuffix(diff, "\n"))
	}
}

func renderGolden(rows []goldenRow) []byte {
	var b bytes.Buffer
	b.WriteString("# The app's tenancy matrix, checked by tenancytest.RequireMatrix.\n")
	b.WriteString("# Rewrite it after an intended change: go test -run <the test> -tenancy.update\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "# "+strings.Join(goldenColumns, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r.cells))
		for i, c := range r.cells {
			cells[i] = quote(c)
		}
		fmt.Fprintln(w, "  "+strings.Join(cells, "\t"))
	}
	w.Flush()
	// tabwriter pads the last column too when a row is wider than another.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return []byte(strings.Join(lines, "\n"))
}

// quote keeps a cell one field: names are free text in principle.
func quote(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '#' }) {
		return strconv.Quote(s)
	}
	return s
}

func parseGolden(b []byte) ([]goldenRow, error) {
	var rows []goldenRow
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cells, err := fields(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if len(cells) != len(goldenColumns) {
			return nil, fmt.Errorf("line %d: %d columns, want %d (%s)", n, len(cells), len(goldenColumns), strings.Join(goldenColumns, " "))
		}
		rows = append(rows, goldenRow{cells: cells})
	}
	return rows, sc.Err()
}

func fields(line string) ([]string, error) {
	var out []string
	for line = strings.TrimLeftFunc(line, unicode.IsSpace); line != ""; line = strings.TrimLeftFunc(line, unicode.IsSpace) {
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, err
			}
			s, _ := strconv.Unquote(q)
			out, line = append(out, s), line[len(q):]
			continue
		}
		end := strings.IndexFunc(line, unicode.IsSpace)
		if end < 0 {
			end = len(line)
		}
		out, line = append(out, line[:end]), line[end:]
	}
	return out, nil
}

// diffMatrix names every route whose line differs, field by field.
func diffMatrix(want, got []goldenRow) string {
	index := func(rows []goldenRow) map[string]goldenRow {
		m := make(map[string]goldenRow, len(rows))
		for _, r := range rows {
			m[r.key()] = r
		}
		return m
	}
	w, g := index(want), index(got)
	var keys []string
	for k := range w {
		keys = append(keys, k)
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		wr, inW := w[k]
		gr, inG := g[k]
		switch {
		case !inG:
			fmt.Fprintf(&b, "- %s: route gone (was %s)\n", k, describe(wr))
		case !inW:
			fmt.Fprintf(&b, "+ %s: new route (%s)\n", k, describe(gr))
		default:
			var changes []string
			for i := 2; i < len(goldenColumns); i++ {
				if wr.cells[i] != gr.cells[i] {
					changes = append(changes, fmt.Sprintf("%s %s -> %s", goldenColumns[i], wr.cells[i], gr.cells[i]))
				}
			}
			if len(changes) > 0 {
				fmt.Fprintf(&b, "~ %s: %s\n", k, strings.Join(changes, ", "))
			}
		}
	}
	return b.String()
}

func describe(r goldenRow) string {
	var parts []string
	for i := 2; i < len(goldenColumns); i++ {
		parts = append(parts, goldenColumns[i]+" "+r.cells[i])
	}
	return strings.Join(parts, ", ")
}
