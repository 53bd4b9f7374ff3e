package floors_test

// Tests that pin down what mutation testing found unchecked (make mutate;
// docs/reliability.md): the fix each refusal carries, the connection
// budget's edges, and the shared validation entry of the code docs.

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// onlyFix checks one route and returns the fix of its one refusal.
func onlyFix(t *testing.T, b floors.Backend, floor tenancy.Tier, r floors.Route) string {
	t.Helper()
	r.Name = "r"
	rep := floors.Check([]floors.Module{{Name: "m", Backend: b, Floor: floor, Routes: []floors.Route{r}}}, nil)
	if len(rep.Errors) != 1 {
		t.Fatalf("want one refusal, got %v", rep.Errors)
	}
	var e *tenancy.Error
	if !errors.As(rep.Errors[0], &e) {
		t.Fatalf("refusal is not a *tenancy.Error: %v", rep.Errors[0])
	}
	return e.Fix
}

func TestRefusalFixNamesWhatToChange(t *testing.T) {
	dedicated := postgresLike()
	namespace := postgresLike()
	namespace.Ceiling = tenancy.Namespace
	static := []floors.Relation{{Role: "read", Name: "orders"}}
	cases := []struct {
		name  string
		b     floors.Backend
		floor tenancy.Tier
		route floors.Route
		want  string
	}{
		{"tagged, routed client available", dedicated, tenancy.Tagged,
			floors.Route{Kind: "document", Relations: static},
			"mark the route TenantAware or resolve every relation per tenant, or route the client per tenant"},
		{"tagged, no routed client", namespace, tenancy.Tagged,
			floors.Route{Kind: "document", Relations: static},
			"mark the route TenantAware or resolve every relation per tenant"},
		{"tagged on a kind without a tagged tier", dedicated, tenancy.Tagged,
			floors.Route{Kind: "topic"},
			"resolve the container per tenant (namespace), or route the client per tenant"},
		{"never namespace, routed client available", dedicated, tenancy.Namespace,
			floors.Route{Kind: "hub_search", TenantAware: true},
			"hub_search routes never reach namespace: route the client per tenant (dedicated)"},
		{"never namespace, no routed client", namespace, tenancy.Namespace,
			floors.Route{Kind: "hub_search", TenantAware: true},
			"hub_search routes never reach namespace on postgres: lower the floor"},
		{"resolver ignored unless tenant-aware", dedicated, tenancy.Namespace,
			floors.Route{Kind: "outbox", Relations: []floors.Relation{{Role: "table", Name: "t", PerTenant: true}}},
			"mark the route TenantAware (its resolver is passed the tenant only then) and resolve every relation per tenant, or route the client per tenant"},
		{"only the static counted relations named", dedicated, tenancy.Namespace,
			floors.Route{Kind: "document", Relations: []floors.Relation{
				{Role: "read", Name: "orders", PerTenant: true}, {Role: "write", Name: "orders_w"}, {Role: "audit", Name: "a"}}},
			"give a per-tenant resolver to every relation the route names (static now: write (orders_w)), or route the client per tenant"},
		{"tenant-aware outbox with a static table", namespace, tenancy.Namespace,
			floors.Route{Kind: "outbox", TenantAware: true, Relations: []floors.Relation{{Role: "table", Name: "t"}}},
			"give a per-tenant resolver to every relation the route names (static now: table (t))"},
		{"no relation at all", dedicated, tenancy.Namespace,
			floors.Route{Kind: "document"},
			"give the route a per-tenant resolver on every relation, or route the client per tenant"},
		{"dedicated with a routed client", dedicated, tenancy.Dedicated,
			floors.Route{Kind: "document", TenantAware: true},
			"run the route on a routed client (per-tenant credentials)"},
		{"raw text without a routed client", namespace, tenancy.None,
			floors.Route{Kind: "document", Origin: tenancy.Raw},
			"postgres has no per-tenant connections (ceiling namespace): move the route to a backend with a routed client"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := onlyFix(t, c.b, c.floor, c.route); got != c.want {
				t.Errorf("fix %q\nwant %q", got, c.want)
			}
		})
	}
}

// A budget of zero is no budget: any worst case passes.
func TestConnectionBudgetZeroIsUnbounded(t *testing.T) {
	m := floors.Module{Name: "m", Backend: postgresLike(), WorstCaseConns: 256}
	if rep := floors.Check([]floors.Module{m}, nil); !rep.OK() {
		t.Fatalf("no budget declared but refused: %v", rep.Errors)
	}
	m.ConnBudget = 255
	if got := tenancy.CodeOf(errors.Join(floors.Check([]floors.Module{m}, nil).Errors...)); got != tenancy.CodeConnectionBudgetExceeded {
		t.Fatalf("one connection over budget: code %q", got)
	}
}

func TestExplainConcreteValidationCode(t *testing.T) {
	var shared floors.CodeDoc
	for _, d := range floors.CodeDocs {
		if d.Code == "<backend>_tenancy_validation_failed" {
			shared = d
		}
	}
	if shared.Meaning == "" {
		t.Fatal("CodeDocs has no shared validation entry")
	}
	d, ok := floors.Explain("redis_tenancy_validation_failed")
	if !ok || d.Code != "redis_tenancy_validation_failed" || d.Meaning != shared.Meaning || d.Fix != shared.Fix {
		t.Fatalf("Explain(redis_tenancy_validation_failed) = %+v, %v; want the shared entry", d, ok)
	}
}

func TestCodesMarkdownListsConcreteCodesOnce(t *testing.T) {
	var none bytes.Buffer
	if err := floors.WriteCodesMarkdown(&none); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(none.String(), "Concrete codes:") {
		t.Error("concrete codes listed with no backend given")
	}
	var b bytes.Buffer
	if err := floors.WriteCodesMarkdown(&b, floors.Backend{Name: "postgres"}, floors.Backend{Name: "redis"}); err != nil {
		t.Fatal(err)
	}
	const want = "Concrete codes: `postgres_tenancy_validation_failed` `redis_tenancy_validation_failed`.\n"
	if n := strings.Count(b.String(), "Concrete codes:"); n != 1 || !strings.Contains(b.String(), want) {
		t.Errorf("%d concrete-code lines; want one %q", n, want)
	}
	entry := strings.Index(b.String(), "## `<backend>_tenancy_validation_failed`")
	if entry < 0 || strings.Index(b.String(), want) < entry {
		t.Error("concrete codes do not follow the shared validation entry")
	}
}

// The matrix shows "-" for no declared floor and no connection bound, the
// scope instead of the floor for fleet and tenant-global routes, and every
// warning of every route.
func TestMatrixCells(t *testing.T) {
	aware := floors.Route{Kind: "document", TenantAware: true,
		Relations: []floors.Relation{{Role: "read", PerTenant: true}, {Role: "write", PerTenant: true}, {Role: "history", PerTenant: true}}}
	a, b := aware, aware
	a.Name, b.Name = "a", "b"
	rep := floors.Check([]floors.Module{
		{Name: "m", Backend: postgresLike(), Routes: []floors.Route{a, b, {Name: "g", Kind: "document", TenantGlobal: true}}},
		{Name: "n", Backend: postgresLike(), Floor: tenancy.Tagged, WorstCaseConns: 1, Routes: []floors.Route{{Name: "t", Kind: "document", TenantAware: true}}},
	}, nil)
	var md, text bytes.Buffer
	if err := rep.Matrix.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| m | a | document | namespace | structured | none | - | - | ok |\n",
		"| m | g | document | none | structured | none | tenant-global | - | ok |\n",
		"| n | t | document | tagged | structured | none | tagged | 1 | ok |\n",
	} {
		if !strings.Contains(md.String(), row) {
			t.Errorf("matrix lacks row %q:\n%s", row, md.String())
		}
	}
	if err := rep.Matrix.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"warning: m/a: ", "warning: m/b: "} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
}

func TestBindingNames(t *testing.T) {
	want := map[floors.Binding]string{floors.Unbound: "unbound", floors.PerRow: "per-row",
		floors.FromHeaders: "from-headers", floors.Sharded: "sharded", floors.Sharded + 1: "binding(?)"}
	for b, name := range want {
		if got := b.String(); got != name {
			t.Errorf("Binding(%d) = %q, want %q", b, got, name)
		}
	}
}

// Describe states, per kind, how each tier is reached; it is what the
// capabilities table of the docs is generated from.
func TestDescribeEveryRule(t *testing.T) {
	b := postgresLike()
	caps := map[floors.Kind]floors.Capability{}
	for _, c := range floors.Describe(b) {
		caps[c.Kind] = c
	}
	want := map[floors.Kind][3]string{
		"fleet":        {"refused (fleet)", "refused (fleet)", "refused (fleet)"},
		"topic":        {"no (TenantAware refused)", "per-tenant resolver on every relation", "routed client"},
		"federated":    {"TenantAware, when every relation is scoped", "never", "routed client"},
		"outbox":       {"TenantAware", "per-tenant resolver on table (counts only when TenantAware)", "routed client"},
		"search":       {"TenantAware", "per-tenant resolver on read, heap, index", "routed client"},
		"dynamic_read": {"TenantAware", "per-tenant resolver on schema", "routed client"},
	}
	for k, w := range want {
		c := caps[k]
		if got := [3]string{c.Tagged, c.Namespace, c.Dedicated}; got != w {
			t.Errorf("%s: %q, want %q", k, got, w)
		}
	}
	if c := caps["dynamic_read"]; c.OriginFloor != tenancy.Namespace || c.Ceiling != tenancy.Dedicated {
		t.Errorf("dynamic_read: origin floor %v, ceiling %v", c.OriginFloor, c.Ceiling)
	}
	b.Ceiling = tenancy.Namespace
	for _, c := range floors.Describe(b) {
		if c.Kind == "document" && (c.Namespace != "per-tenant resolver on read, write, history" || c.Dedicated != "no (ceiling namespace)") {
			t.Errorf("document at ceiling namespace: %+v", c)
		}
	}
	b.Ceiling = tenancy.Tagged
	for _, c := range floors.Describe(b) {
		if c.Kind == "document" && c.Namespace != "no (ceiling)" {
			t.Errorf("document at ceiling tagged: namespace %q", c.Namespace)
		}
	}
	if got := (floors.Warning{Module: "m", Route: "r", Message: "x"}).String(); got != "m/r: x" {
		t.Errorf("Warning.String() = %q", got)
	}
}
