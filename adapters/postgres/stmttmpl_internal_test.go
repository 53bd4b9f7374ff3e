package postgres

import (
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

type tmplSet struct{ a, b string }

func (s *tmplSet) field(i int) *string {
	if i == 0 {
		return &s.a
	}
	return &s.b
}

// A template renders exactly what the builder makes, for any tenant, a
// schema named twice in one statement included; a builder whose text
// depends on the tenant otherwise gets none (its sets are built whole).
func TestTemplatesRenderWhatBuildMakes(t *testing.T) {
	build := func(id tenancy.ID) *tmplSet {
		s := `"p_` + id.Hex() + `"`
		return &tmplSet{a: "SELECT 1 FROM " + s + ".t WHERE id = $1", b: "WITH w AS (DELETE FROM " + s + ".t) INSERT INTO " + s + ".h SELECT 1"}
	}
	tmpl := templates(build, 2, (*tmplSet).field)
	if tmpl == nil {
		t.Fatal("no templates for a builder that names the tenant only by its hex")
	}
	for i := range 200 {
		id := tenancy.MustParseID(fmt.Sprintf("0f1e2d3c-4b5a-4978-8a9b-%012x", uint64(i)*0x9e3779b97f4a&(1<<48-1)))
		want := build(id)
		for f := range 2 {
			if got := tmpl[f].render(id); got != *want.field(f) {
				t.Fatalf("tenant %s statement %d:\n got %s\nwant %s", id, f, got, *want.field(f))
			}
		}
	}
	for name, b := range map[string]func(tenancy.ID) *tmplSet{
		"the tenant's UUID form": func(id tenancy.ID) *tmplSet {
			return &tmplSet{a: `"p_` + id.Hex() + `"`, b: "SELECT '" + id.String() + "'"}
		},
		"the probe's hex in a fixed part": func(id tenancy.ID) *tmplSet {
			return &tmplSet{a: `"` + tmplProbe.Hex() + `_` + id.Hex() + `"`, b: "x"}
		},
	} {
		if templates(b, 2, (*tmplSet).field) != nil {
			t.Errorf("templates for a builder using %s", name)
		}
	}
}

// render allocates the statement text and nothing else.
func TestTemplateRenderOneAllocation(t *testing.T) {
	tmpl := stmtTmpl{`SELECT version, value FROM "p_`, `"."docs" WHERE id = $1`}
	id := tenancy.MustParseID("0f1e2d3c-4b5a-4978-8a9b-acbdcedf0123")
	if n := testing.AllocsPerRun(100, func() { _ = tmpl.render(id) }); n != 1 {
		t.Errorf("render: %v allocations, want 1", n)
	}
}
