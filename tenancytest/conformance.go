package tenancytest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Cell is one route kind of a backend at one tier: one (kind, tier) pair
// of the capability matrix (docs/tenancy-matrix.md) that the backend's
// rules say a route can reach.
type Cell struct {
	Kind floors.Kind
	Tier tenancy.Tier
}

func (c Cell) String() string { return string(c.Kind) + "/" + c.Tier.String() }

// Cells lists every cell of b's rules a route can reach and still wire,
// kinds in name order, tiers ascending: the tiers floors.Backend.Reaches
// finds by deciding the kind's route shapes, as the adapters decide their
// routes. None is no cell: there is no boundary to probe. A fleet kind has
// no cell (it is never tenant-scoped), and a tier below the kind's origin
// floor is refused during fx.New, so it is no cell either.
func Cells(b floors.Backend) []Cell {
	kinds := make([]floors.Kind, 0, len(b.Kinds))
	for k := range b.Kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var out []Cell
	for _, k := range kinds {
		// An origin with no floor is refused at any tier; the wiring check
		// reports it, and no cell of the kind can be built.
		floor, err := b.Kinds[k].Origin.Floor()
		if err != nil {
			continue
		}
		for _, tier := range []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated} {
			if tier >= floor && b.Reaches(k, tier) {
				out = append(out, Cell{Kind: k, Tier: tier})
			}
		}
	}
	return out
}

// Factory builds a route of kind at tier against a live server and returns
// the probe of its operations. It should wire the route's module with the
// tier as its required floor, so that fx.New proves the route reaches it.
// It returns ErrNotCovered for a cell it does not build (the kit fails the
// run for it) and Unavailable(reason) for a cell this server cannot host.
type Factory func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (Probe, error)

// ErrNotCovered is what a Factory returns for a cell it does not build.
// Conformance lists every such cell and fails the run: a reachable cell
// without a probe is an untested claim of the matrix.
var ErrNotCovered = errors.New("tenancytest: the factory does not cover this cell")

// unavailable is a cell the factory cannot build on this server.
type unavailable struct{ reason string }

func (u *unavailable) Error() string { return "tenancytest: cell unavailable: " + u.reason }

// Unavailable is what a Factory returns for a cell the server under test
// cannot host, such as a per-tenant Neo4j database on Community edition.
// Conformance skips the cell and prints the reason, which must say what
// is missing and where the cell is tested instead, if anywhere.
func Unavailable(reason string) error { return &unavailable{reason: reason} }

// Conformance runs the boundary probe on every cell of b's rules (see
// Cells), each in a subtest named kind/tier: A writes and reads its own,
// B sees and changes nothing of A's through every operation the probe
// sets (Boundary), and the write and every read fail closed with
// tenant_unbound when no tenant is bound (FailsClosed), and every call of
// a suspended tenant fails with tenant_suspended until it is resumed
// (Suspended: the probe's Suspensions is required), and, when the probe
// sets Tenants, that offboarding A erases its record with proof (Erased),
// and, when a worker delivers the route's records (Delivered), that a
// tenant whose items fail delays no other's (Fair: Probe.Fair is
// required there).
// Cells the factory
// does not cover fail the run, and the kit lists them at the end with the
// cells it skipped and why.
func Conformance(t *testing.T, b floors.Backend, f Factory) {
	t.Helper()
	cells := Cells(b)
	if len(cells) == 0 {
		t.Fatalf("tenancytest.Conformance: the rules of backend %q reach no tier a route can be probed at", b.Name)
	}
	var uncovered, skipped []string
	for _, c := range cells {
		t.Run(c.String(), func(t *testing.T) {
			// A skip, the factory's own (a server not reachable) or an
			// unavailable cell's, is listed in the summary too.
			reason := "the factory skipped it (see the cell's log)"
			defer func() {
				if t.Skipped() {
					skipped = append(skipped, c.String()+": "+reason)
				}
			}()
			p, err := f(t, c.Kind, c.Tier)
			var u *unavailable
			switch {
			case errors.Is(err, ErrNotCovered):
				uncovered = append(uncovered, c.String())
				t.Errorf("%s %s: the rules say a route reaches %s, but the factory builds no probe for it; build the route in the factory", b.Name, c.Kind, c.Tier)
				return
			case errors.As(err, &u):
				if strings.TrimSpace(u.reason) == "" {
					t.Fatalf("%s %s/%s: unavailable without a reason; say what the server lacks", b.Name, c.Kind, c.Tier)
				}
				reason = u.reason
				t.Skipf("SKIPPED %s %s/%s: %s", b.Name, c.Kind, c.Tier, u.reason)
			case err != nil:
				t.Fatalf("%s %s/%s: the factory failed: %v", b.Name, c.Kind, c.Tier, err)
			}
			t.Logf("probing %s", strings.Join(p.operations(), ", "))
			Boundary(t, p)
			FailsClosed(t, p)
			Suspended(t, p)
			if p.Tenants != nil {
				Erased(t, p)
			}
			switch {
			case p.Fair != nil:
				Fair(t, *p.Fair)
			case p.Delivered:
				t.Errorf("%s %s/%s: the probe's Read reports a worker's deliveries, but it sets no Fair: give it the worker (tenancytest.Worker)", b.Name, c.Kind, c.Tier)
			}
		})
	}
	for _, s := range skipped {
		t.Logf("%s: cell skipped: %s", b.Name, s)
	}
	if len(uncovered) > 0 {
		t.Errorf("%s: %d of %d cells the rules reach have no probe: %s", b.Name, len(uncovered), len(cells), strings.Join(uncovered, ", "))
	}
}

// FailsClosed calls Write, Read and whichever of List, Count and Search
// the probe sets with no tenant bound, and again under a tenant-global
// context, and asserts each fails with a *tenancy.Error of code
// tenant_unbound that names the module, backend and route and says how to
// fix it: never the default tenant, never a shared container. Update and Delete are left out: a probe writes them
// as tenant B's attempts, free to assert B's own error, such as not found.
// A Delivered read is no call to refuse: under no tenant it must report
// nothing delivered, and no error.
func FailsClosed(t testing.TB, p Probe) {
	t.Helper()
	if p.Write == nil || p.Read == nil {
		t.Fatal("tenancytest.FailsClosed: Write and Read are required")
	}
	bg := context.Background()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"no tenant", bg}, {"tenant-global", tenancy.WithGlobal(bg)}} {
		if p.Delivered {
			found, err := p.Read(c.ctx)
			if err != nil || found {
				t.Errorf("delivered under %s: found=%v err=%v, want nothing delivered", c.name, found, err)
			}
		}
		for _, op := range p.calls(false) {
			if op.name == "read" && p.Delivered {
				continue
			}
			err := op.call(c.ctx)
			var coded *tenancy.Error
			switch {
			case err == nil:
				t.Errorf("%s under %s succeeded: want tenant_unbound", op.name, c.name)
			case !errors.As(err, &coded) || coded.Code != tenancy.CodeTenantUnbound:
				t.Errorf("%s under %s: %v, want a *tenancy.Error with code tenant_unbound", op.name, c.name, err)
			case coded.Fix == "":
				t.Errorf("%s under %s: tenant_unbound without a fix text: %v", op.name, c.name, err)
			case coded.Module == "" || coded.Backend == "" || coded.Route == "":
				t.Errorf("%s under %s: tenant_unbound names module=%q backend=%q route=%q; want all three",
					op.name, c.name, coded.Module, coded.Backend, coded.Route)
			}
		}
	}
}

type call struct {
	name string
	call func(context.Context) error
}

// calls adapts each operation the probe sets to one signature; mutators
// adds Update and Delete.
func (p Probe) calls(mutators bool) []call {
	out := []call{
		{"write", p.Write},
		{"read", func(ctx context.Context) error { _, err := p.Read(ctx); return err }},
	}
	if p.List != nil {
		out = append(out, call{"list", func(ctx context.Context) error { _, err := p.List(ctx); return err }})
	}
	for _, op := range []struct {
		name string
		fn   func(context.Context) (int, error)
	}{{"count", p.Count}, {"search", p.Search}} {
		if op.fn != nil {
			out = append(out, call{op.name, func(ctx context.Context) error { _, err := op.fn(ctx); return err }})
		}
	}
	if !mutators {
		return out
	}
	if p.Update != nil {
		out = append(out, call{"update", p.Update})
	}
	if p.Delete != nil {
		out = append(out, call{"delete", p.Delete})
	}
	return out
}

// operations names what the probe covers, for the test log.
func (p Probe) operations() []string {
	var names []string
	for _, c := range p.calls(true) {
		names = append(names, c.name)
	}
	if p.Intact != nil {
		names = append(names, "intact")
	}
	return names
}
