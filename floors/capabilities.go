package floors

import (
	"io"
	"slices"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Capability says how one route kind of one backend reaches each tier. It is
// derived from the backend's Rules, never written by hand.
type Capability struct {
	Backend     string       `json:"backend"`
	Kind        Kind         `json:"kind"`
	Summary     string       `json:"summary,omitempty"`
	Ceiling     tenancy.Tier `json:"ceiling"`
	Tagged      string       `json:"tagged"`
	Namespace   string       `json:"namespace"`
	Dedicated   string       `json:"dedicated"`
	OriginFloor tenancy.Tier `json:"origin_floor"`
	Note        string       `json:"note,omitempty"`
}

// Capabilities is the capability matrix of a set of backends.
type Capabilities []Capability

// Describe derives the capability matrix of the given backends, kinds in
// name order.
func Describe(backends ...Backend) Capabilities {
	var out Capabilities
	for _, b := range backends {
		kinds := make([]Kind, 0, len(b.Kinds))
		for k := range b.Kinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			out = append(out, describeKind(b, k, b.Kinds[k]))
		}
	}
	return out
}

// shape is the route a service author writes for a kind: tenant-aware or
// not, every counted relation per tenant or static (scoped or not),
// routed or not. The matrix is what decide makes of these shapes, so it
// cannot say what the adapters do not enforce.
func shape(rule KindRule, aware, perTenant, scoped, routed bool) Route {
	roles := rule.Relations
	if len(roles) == 0 {
		roles = []string{"relation"}
	}
	r := Route{Name: "shape", TenantAware: aware, Routed: routed}
	for _, role := range roles {
		r.Relations = append(r.Relations, Relation{Role: role, Name: role, PerTenant: perTenant, Scoped: scoped})
	}
	return r
}

// Reaches reports whether a route of kind k can reach tier t on b: some
// shape of it does under decide, within b's ceiling. Fleet kinds reach no
// tenant tier.
func (b Backend) Reaches(k Kind, t tenancy.Tier) bool {
	rule, ok := b.Kinds[k]
	if !ok || rule.Fleet || t > b.Ceiling {
		return false
	}
	for _, aware := range []bool{false, true} {
		for _, per := range []bool{false, true} {
			for _, scoped := range []bool{false, true} {
				for _, routed := range []bool{false, true} {
					if decide(rule, shape(rule, aware, per, scoped, routed)).Reached == t {
						return true
					}
				}
			}
		}
	}
	return false
}

func describeKind(b Backend, k Kind, rule KindRule) Capability {
	floor, _ := rule.Origin.Floor()
	c := Capability{Backend: b.Name, Kind: k, Summary: rule.Summary, Ceiling: b.Ceiling, OriginFloor: floor, Note: rule.Note}
	reach := func(r Route, t tenancy.Tier) bool { return t <= b.Ceiling && decide(rule, r).Reached == t }
	if rule.Fleet {
		c.Tagged, c.Namespace, c.Dedicated = "refused (fleet)", "refused (fleet)", "refused (fleet)"
		return c
	}
	switch {
	case reach(shape(rule, true, false, false, false), tenancy.Tagged):
		c.Tagged = "TenantAware"
	case reach(shape(rule, true, false, true, false), tenancy.Tagged):
		c.Tagged = "TenantAware, when every relation is scoped"
	default:
		c.Tagged = "no (TenantAware refused)"
	}
	rels := "every relation"
	if len(rule.Relations) > 0 {
		rels = strings.Join(rule.Relations, ", ")
	}
	switch {
	case b.Ceiling < tenancy.Namespace:
		c.Namespace = "no (ceiling)"
	case reach(shape(rule, false, true, false, false), tenancy.Namespace):
		c.Namespace = "per-tenant resolver on " + rels
	case reach(shape(rule, true, true, false, false), tenancy.Namespace):
		c.Namespace = "per-tenant resolver on " + rels + " (counts only when TenantAware)"
	default:
		c.Namespace = "never"
	}
	if reach(shape(rule, false, false, false, true), tenancy.Dedicated) {
		c.Dedicated = "routed client"
	} else {
		c.Dedicated = "no (ceiling " + b.Ceiling.String() + ")"
	}
	return c
}

func (cs Capabilities) table() table {
	t := table{header: []string{"backend", "kind", "tagged", "namespace", "dedicated", "origin floor", "ceiling", "note"}}
	for _, c := range cs {
		t.rows = append(t.rows, []string{c.Backend, string(c.Kind), c.Tagged, c.Namespace, c.Dedicated,
			c.OriginFloor.String(), c.Ceiling.String(), c.Note})
	}
	return t
}

// WriteText renders the capability matrix as aligned columns.
func (cs Capabilities) WriteText(w io.Writer) error { return cs.table().writeText(w) }

// WriteTextWidth renders the capability matrix as aligned columns when
// they fit in width, and otherwise as one wrapped block per route kind.
// width <= 0 means no limit.
func (cs Capabilities) WriteTextWidth(w io.Writer, width int) error {
	return cs.table().writeTextWidth(w, width)
}

// WriteMarkdown renders the capability matrix as a Markdown table.
func (cs Capabilities) WriteMarkdown(w io.Writer) error { return cs.table().writeMarkdown(w) }

// WriteJSON renders the capability matrix as indented JSON.
func (cs Capabilities) WriteJSON(w io.Writer) error { return writeJSON(w, cs) }
