package tenancytest

import (
	"context"
	"crypto/rand"
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Fixed tenants for probes; any distinct non-default IDs would do.
var (
	TenantA = tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	TenantB = tenancy.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")
	// TenantC is a third tenant, for apps that place tenants apart.
	TenantC = tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
)

// Probe describes one route's operations for a boundary probe. Each
// function runs under the context it is given, which the probe binds to
// tenant A or B; none may take a tenant argument. Write and Read are
// required; every other operation is probed when set.
type Probe struct {
	// A and B default to TenantA and TenantB.
	A, B tenancy.ID

	// Write creates the probe record.
	Write func(ctx context.Context) error
	// Read reports whether the probe record is visible.
	Read func(ctx context.Context) (bool, error)
	// Intact reports whether the record still holds what Write wrote
	// (run under A after B's update and delete attempts).
	Intact func(ctx context.Context) (bool, error)
	// List returns the ids visible; the probe record's id is RecordID.
	List     func(ctx context.Context) ([]string, error)
	RecordID string
	// Count returns how many records matching the probe record are visible.
	Count func(ctx context.Context) (int, error)
	// Search returns how many search hits for the probe record are visible.
	Search func(ctx context.Context) (int, error)
	// Update and Delete try to change the probe record; under B they must
	// fail (not found) and change nothing.
	Update func(ctx context.Context) error
	Delete func(ctx context.Context) error
	// Cleanup removes the probe record; the probe runs it under A when
	// the test ends, so a later probe reusing RecordID, or a rerun on the
	// same server, does not find A's record and read it as a leak. Delete
	// is not used for it: it is written for B, and may assert that it
	// fails.
	Cleanup func(ctx context.Context) error

	// Suspensions is the one the route's app holds (fx.Supply(s), or
	// modules.Lifecycle's), for Conformance's suspension check
	// (Suspended): required there.
	Suspensions *modules.Suspensions
	// Tenants, when set, is the route's app's lifecycle (modules.Lifecycle,
	// its modules built with AllowTeardown), for Conformance's offboarding
	// check (Erased); unset, the cell does not check offboarding.
	Tenants *modules.Tenants

	// Delivered marks a Read that reports a background delivery (a
	// consumer handing the record to a handler under the context's
	// binding) rather than a call the route refuses. Under no tenant such
	// a Read must then find nothing delivered (FailsClosed). Such a
	// probe must set Fair.
	Delivered bool
	// Fair is the worker that delivers the route's records, for
	// Conformance's fairness check (Fair): a tenant whose items fail
	// delays no other tenant's. Required with Delivered.
	Fair *Worker
}

// Boundary writes under tenant A, proves A reads its own write (so the
// probe cannot pass by seeing nothing at all), then reads, lists, counts,
// searches, updates and deletes under tenant B and asserts B sees and
// changes nothing of A's. With Probe.Cleanup, what it wrote is removed
// when the test ends.
func Boundary(t testing.TB, p Probe) {
	t.Helper()
	if p.Write == nil || p.Read == nil {
		t.Fatal("tenancytest.Boundary: Write and Read are required")
	}
	if p.A.IsZero() {
		p.A = TenantA
	}
	if p.B.IsZero() {
		p.B = TenantB
	}
	if p.A == p.B {
		t.Fatal("tenancytest.Boundary: A and B are the same tenant")
	}
	ctxA := tenancy.WithTenant(context.Background(), p.A)
	ctxB := tenancy.WithTenant(context.Background(), p.B)

	cleanUp(t, ctxA, p)
	must(t, "write under A", p.Write(ctxA))
	requireVisible(t, "A", ctxA, p, true)
	requireVisible(t, "B", ctxB, p, false)

	if p.Update != nil {
		if err := p.Update(ctxB); err == nil {
			t.Error("B updated A's record: the update reported success")
		}
	}
	if p.Delete != nil {
		if err := p.Delete(ctxB); err == nil {
			t.Error("B deleted A's record: the delete reported success")
		}
	}
	requireVisible(t, "A after B's attempts", ctxA, p, true)
	if p.Intact != nil {
		ok, err := p.Intact(ctxA)
		must(t, "intact under A", err)
		if !ok {
			t.Error("A's record changed after B's update or delete attempt")
		}
	}
}

// cleanUp removes A's probe record when the test ends (Probe.Cleanup). It
// is registered before the write, so a write that failed after writing is
// cleaned too. A removal that fails fails the test, since a rerun would
// find the record; in a test already failed (the write, say, never
// happened) it is only logged.
func cleanUp(t testing.TB, ctxA context.Context, p Probe) {
	if p.Cleanup == nil {
		return
	}
	t.Cleanup(func() {
		if err := p.Cleanup(ctxA); err != nil {
			if t.Failed() {
				t.Logf("tenancytest.Boundary: removing A's record: %v", err)
				return
			}
			t.Errorf("tenancytest.Boundary: removing A's record: %v", err)
		}
	})
}

// requireVisible asserts every read path sees the record (want) or not.
func requireVisible(t testing.TB, who string, ctx context.Context, p Probe, want bool) {
	t.Helper()
	found, err := p.Read(ctx)
	must(t, "read under "+who, err)
	if found != want {
		t.Errorf("read under %s: found=%v, want %v", who, found, want)
	}
	if p.List != nil {
		ids, err := p.List(ctx)
		must(t, "list under "+who, err)
		if got := slices.Contains(ids, p.RecordID); got != want {
			t.Errorf("list under %s: contains %q = %v, want %v (ids %v)", who, p.RecordID, got, want, ids)
		}
	}
	for _, op := range []struct {
		name string
		fn   func(context.Context) (int, error)
	}{{"count", p.Count}, {"search", p.Search}} {
		if op.fn == nil {
			continue
		}
		n, err := op.fn(ctx)
		must(t, op.name+" under "+who, err)
		if (n > 0) != want {
			t.Errorf("%s under %s: %d, want %s", op.name, who, n, map[bool]string{true: "at least 1", false: "0"}[want])
		}
	}
}

func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// FreshTenant is a random tenant no other test uses: a test that
// offboards or sweeps a tenant on a shared server touches nothing of
// another test's.
func FreshTenant(t testing.TB) tenancy.ID {
	t.Helper()
	var b [16]byte
	_, _ = rand.Read(b[:])
	id, err := tenancy.IDFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
