package postgres

import (
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// stmtTmpl is a per-tenant statement text with the tenant's hex left out
// wherever it names the tenant's schema: segments to join with it.
// Rendering is one allocation of the exact text, with nothing cached per
// tenant, so a route serving more tenants than any cache holds builds the
// one statement a call runs, not the route's whole set.
type stmtTmpl []string

// hexLen is the length of tenancy.ID.Hex.
const hexLen = 32

func (t stmtTmpl) render(tenant tenancy.ID) string {
	var hex [hexLen]byte
	for i, c := range tenant.Bytes() {
		hex[2*i], hex[2*i+1] = hexDigits[c>>4], hexDigits[c&0xf]
	}
	n := (len(t) - 1) * hexLen
	for _, s := range t {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	for i, s := range t {
		if i > 0 {
			b.Write(hex[:])
		}
		b.WriteString(s)
	}
	return b.String()
}

const hexDigits = "0123456789abcdef"

// Two tenants no one is bound to: a template is what build makes for the
// first with its hex cut out, kept only if it renders exactly what build
// makes for the second (so no other part of the text moved with it).
var (
	tmplProbe = tenancy.MustParseID("7e3a9c1d-5b2f-4e80-9d6a-0c4b8f1e2a53")
	tmplCheck = tenancy.MustParseID("c81f04b2-96e7-4d3a-a5f0-3b7d2e9c6a18")
)

// templates derives the templates of a statement set's fields from its
// builder, or returns nil when the texts depend on the tenant in any other
// way than by its hex (the caller then builds whole sets, cached).
func templates[S any](build func(tenancy.ID) *S, n int, field func(*S, int) *string) []stmtTmpl {
	probe, check := build(tmplProbe), build(tmplCheck)
	out := make([]stmtTmpl, n)
	for i := range n {
		t := stmtTmpl(strings.Split(*field(probe, i), tmplProbe.Hex()))
		if t.render(tmplCheck) != *field(check, i) {
			return nil
		}
		out[i] = t
	}
	return out
}

// docNeed is a set of docStmts statements, in docFields' order.
type docNeed uint8

const (
	docGet docNeed = 1 << iota
	docExists
	docCreate
	docUpdate
	docDelete
	docList
	docCount
)

// docFields is how many statements a docStmts has.
const docFields = 7

// field is s's statement for bit i of docNeed.
func (s *docStmts) field(i int) *string {
	switch i {
	case 0:
		return &s.get
	case 1:
		return &s.exists
	case 2:
		return &s.create
	case 3:
		return &s.update
	case 4:
		return &s.delete
	case 5:
		return &s.list
	default:
		return &s.count
	}
}

// stmts returns the statements of a call for tenant: the static set, the
// tenant's prepared set, or past the prepared budget a set rendered now
// with only the statements in need (one allocation each).
func (d *Documents[T]) stmts(tenant tenancy.ID, need docNeed) docStmts {
	switch {
	case d.static != nil:
		return *d.static
	case d.tmpl == nil:
		return *cached(d.route, nil, tenant, d.build)
	}
	if st := preparedSet(d.route, tenant, d.build); st != nil {
		return *st
	}
	st := docStmts{sql: sql{tagged: d.spec.decision.Tagged, unprepared: true}}
	for i := range docFields {
		if need&(1<<i) != 0 {
			*st.field(i) = d.tmpl[i].render(tenant)
		}
	}
	return st
}
