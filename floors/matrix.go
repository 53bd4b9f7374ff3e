package floors

import (
	"fmt"
	"io"
	"strconv"

	"github.com/tenantwire/tenantwire/tenancy"
)

// VerdictOK is the verdict of a route that clears every floor.
const VerdictOK = "ok"

// Row is one route of one module as the check saw it.
type Row struct {
	Module      string         `json:"module"`
	Backend     string         `json:"backend"`
	Route       string         `json:"route"`
	Kind        Kind           `json:"kind"`
	Reached     tenancy.Tier   `json:"reached"`
	Origin      tenancy.Origin `json:"origin"`
	OriginFloor tenancy.Tier   `json:"origin_floor"`
	// Declared is the module's floor; None means none was declared.
	Declared tenancy.Tier `json:"declared_floor"`
	Ceiling  tenancy.Tier `json:"ceiling"`
	// Scope is "fleet" or "tenant-global" for deployment-wide routes.
	Scope string `json:"scope,omitempty"`
	// WorstCaseConns is the module's worst-case connection count (routed
	// pool bound × per-pool maximum); zero when not applicable.
	WorstCaseConns int `json:"worst_case_conns,omitempty"`
	// Placement is the module's placement when it is one of several a
	// module offers (Module.Placement); None otherwise.
	Placement tenancy.Tier `json:"placement,omitempty"`
	// Verdict is VerdictOK or the code of the first refusal.
	Verdict  string   `json:"verdict"`
	Warnings []string `json:"warnings,omitempty"`
}

// Matrix is the live tenancy matrix of an app: every route of every module.
type Matrix struct {
	Rows []Row `json:"routes"`
}

func declared(t tenancy.Tier) string {
	if t == tenancy.None {
		return "-"
	}
	return t.String()
}

func (r Row) floorCell() string {
	if r.Scope != "" {
		return r.Scope
	}
	return declared(r.Declared)
}

func (m Matrix) table() table {
	t := table{header: []string{"module", "route", "kind", "reached", "origin", "origin floor", "declared", "max conns", "verdict"}}
	for _, r := range m.Rows {
		conns := "-"
		if r.WorstCaseConns > 0 {
			conns = strconv.Itoa(r.WorstCaseConns)
		}
		t.rows = append(t.rows, []string{r.Module, r.Route, string(r.Kind), r.Reached.String(),
			r.Origin.String(), r.OriginFloor.String(), r.floorCell(), conns, r.Verdict})
	}
	return t
}

// WriteText renders the matrix as aligned columns, then its warnings.
func (m Matrix) WriteText(w io.Writer) error {
	if err := m.table().writeText(w); err != nil {
		return err
	}
	for _, r := range m.Rows {
		for _, msg := range r.Warnings {
			if _, err := fmt.Fprintf(w, "warning: %s/%s: %s\n", r.Module, r.Route, msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteMarkdown renders the matrix as a Markdown table.
func (m Matrix) WriteMarkdown(w io.Writer) error { return m.table().writeMarkdown(w) }

// WriteJSON renders the matrix as indented JSON.
func (m Matrix) WriteJSON(w io.Writer) error { return writeJSON(w, m) }
