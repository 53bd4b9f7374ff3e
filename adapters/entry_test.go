package adapters_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// site is one direct call of an entry step: the adapter's file, the
// function it is in (Type.Method) and the step.
type site struct{ file, fn, step string }

func (s site) String() string { return s.file + " " + s.fn + " " + s.step }

// steps finds the entry steps a file calls directly: the tenant
// (tenancy.Require, tenancy.FromContext), the suspension and in-flight
// count (<...>.suspensions.Check/Enter), the version gate
// (<...>.ensureCurrent) and the span (<...>.tel.Start/StartLinked).
func steps(t *testing.T, fset *token.FileSet, file string) []site {
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []site
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			typ := fd.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if ix, ok := typ.(*ast.IndexExpr); ok {
				typ = ix.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				fn = id.Name + "." + fn
			}
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if step := stepOf(sel); step != "" {
				out = append(out, site{file: filepath.ToSlash(file), fn: fn, step: step})
			}
			return true
		})
	}
	return out
}

// stepOf names the entry step sel calls, or "".
func stepOf(sel *ast.SelectorExpr) string {
	m := sel.Sel.Name
	x := sel.X
	if ix, ok := x.(*ast.IndexExpr); ok { // instruments by route: tels[spec]
		x = ix.X
	}
	switch x := x.(type) {
	case *ast.Ident:
		if x.Name == "tenancy" && (m == "Require" || m == "FromContext") {
			return "tenancy." + m
		}
		return stepOn(x.Name, m)
	case *ast.SelectorExpr:
		if m == "ensureCurrent" {
			return "ensureCurrent"
		}
		return stepOn(x.Sel.Name, m)
	}
	return ""
}

// stepOn names method m called on a value named recv, when it is a step.
func stepOn(recv, m string) string {
	switch {
	case m == "ensureCurrent":
		return "ensureCurrent"
	case strings.EqualFold(recv, "suspensions") && (m == "Check" || m == "Enter"):
		return "Suspensions." + m
	case (recv == "tel" || recv == "tels" || recv == "units" || strings.HasSuffix(recv, "Tel")) && (m == "Start" || m == "StartLinked"):
		return "telemetry." + m
	}
	return ""
}

// TestAdaptersEnterThroughTheKit: no adapter's non-test code runs an
// entry step itself; each route's calls go through modules.Entry, so the
// order of the steps (tenant, in flight and suspension, reach, version,
// span) is the kit's alone. allowed lists each site that still does, by
// file, function and step, with why; a new direct call fails, and so does
// an allowed site that is gone (drop its line).
func TestAdaptersEnterThroughTheKit(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	seen := map[string]bool{}
	per := map[string]int{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		for _, s := range steps(t, fset, file) {
			per[strings.Split(s.file, "/")[0]]++
			key := s.String()
			count[key]++
			if _, ok := allowed[key]; !ok {
				t.Errorf("%s calls %s directly: enter the route's calls through its modules.Entry (or, if it must stay, list it in allowed with why)", s.file+" "+s.fn, s.step)
				continue
			}
			seen[key] = true
		}
	}
	var stale []string
	for key := range allowed {
		if !seen[key] {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	for _, key := range stale {
		t.Errorf("allowed site %q no longer calls its step: drop its line", key)
	}
	var b strings.Builder
	backends := make([]string, 0, len(per))
	for k := range per {
		backends = append(backends, k)
	}
	sort.Strings(backends)
	for _, k := range backends {
		fmt.Fprintf(&b, " %s=%d", k, per[k])
	}
	notYet := 0
	for _, why := range allowed {
		if why == pending {
			notYet++
		}
	}
	t.Logf("direct entry steps left, by adapter:%s (%d sites allowed, %d of them route calls not yet on the Entry)", b.String(), len(allowed), notYet)
	if os.Getenv("ENTRY_SITES") != "" {
		keys := make([]string, 0, len(count))
		for k := range count {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Logf("%q: %q,", k, "")
		}
	}
}

// allowed is every direct step call that remains, with why: a worker or
// relay binding its row's own tenant, a check inside a call already
// entered, a start-up check, or (pending) a route call not yet moved (none now).
var allowed = map[string]string{
	"kafka/consumer.go worker.prepare Suspensions.Check":            worker,
	"kafka/consumer.go worker.process telemetry.StartLinked":        worker,
	"kafka/consumer.go worker.start tenancy.FromContext":            worker,
	"kafka/parked.go worker.once telemetry.StartLinked":             worker,
	"kafka/producer.go Producer.tenant Suspensions.Check":           "TopicFor: names the tenant's topic and writes nothing, so it is checked, not held in flight",
	"kafka/producer.go Producer.tenant tenancy.FromContext":         "TopicFor, as above",
	"mongo/outbox.go Outbox.Write telemetry.Start":                  "outbox write: a row's tenant is the bound one or none under tenancy.Global, a scope the Entry does not take",
	"mongo/outbox.go Outbox.Write tenancy.FromContext":              "outbox write: the span's tenant, as above",
	"mongo/outbox.go Outbox.enterWrite ensureCurrent":               "outbox write: the version gate of the row tenant, as above",
	"mongo/outbox.go Outbox.readTarget tenancy.FromContext":         "relay read: the bound tenant of a sharded relay, or every row",
	"mongo/outbox.go Outbox.rowTenant tenancy.FromContext":          "outbox write: the row tenant, as above",
	"mongo/outbox.go Outbox.target Suspensions.Enter":               "outbox: the row tenant held in flight, as above",
	"mongo/relay.go Outbox.claim tenancy.FromContext":               worker,
	"neo4j/migrate_check.go core.sharedCurrent ensureCurrent":       "start-up check of the shared database's version, no call",
	"neo4j/route.go route.current ensureCurrent":                    versionStep,
	"neo4j/route.go route.checkScope tenancy.FromContext":           "inside a transaction: the call's tenant must be the one its entry pinned (tenant_scope_changed)",
	"postgres/client.go Client.Pool tenancy.FromContext":            "escape hatch: the raw pool of the bound tenant, outside the routes' checks (documented)",
	"postgres/dynamic.go DynamicRead.Schema tenancy.FromContext":    "the compiler asks the bound tenant's schema name; no call runs",
	"postgres/migrate_check.go Client.sharedCurrent ensureCurrent":  "start-up check of the shared schema's version, no call",
	"postgres/outbox.go Outbox.claim tenancy.FromContext":           worker,
	"postgres/outbox.go Outbox.rowTenant tenancy.FromContext":       "outbox write: a row's tenant is the bound one or none under tenancy.Global, a scope the Entry does not take",
	"postgres/outbox.go Outbox.sweep tenancy.FromContext":           worker,
	"postgres/route.go route.current ensureCurrent":                 versionStep,
	"postgres/route.go route.reach Suspensions.Enter":               "the outbox write's entry (row tenant, or none under tenancy.Global) and the relay's sweep, through connect",
	"postgres/recycle.go tenantsServed.install tenancy.FromContext": "the pool's acquire hook counts the tenants a connection served (RecycleAfter); it admits no call",
	"postgres/telemetry.go route.refuse telemetry.Start":            "a refusal before the entry (an outbox write's unbound row tenant, a dynamic read inside a unit of work), recorded as its call",
	"postgres/telemetry.go route.tracedConnect telemetry.Start":     "the outbox write's entry (row tenant, or none under tenancy.Global) and the relay's sweep, through connect",
	"postgres/unit.go Client.tracedUnit telemetry.Start":            "the unit of work's span (telemetry.Unit, with its commit or rollback outcome) around its entry",
	"postgres/unit.go Client.tracedUnit tenancy.FromContext":        "the unit span's tenant, as above",
	"postgres/unit.go unit.admit tenancy.FromContext":               "inside a unit of work: a joining call's tenant must be the unit's",
	"redis/stream.go Stream.Deliver tenancy.FromContext":            "relay delivery: the bound tenant must be the row's",
}

const (
	worker      = "worker: binds or checks a row's or record's own tenant, not a route call's"
	versionStep = "the route's version gate: the Current step handed to modules.NewEntry"
	pending     = "route call not yet on modules.Entry: move it, then drop the line"
)
