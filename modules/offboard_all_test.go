package modules_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOffboardAllRecordsEverySuspensionFirst: an OffboardAll held in its
// first tenant's teardown, as a crash would leave it, with another
// process started meanwhile. With RecordSuspended the new process serves
// neither tenant of the run, though the second's data is whole; without
// (the control), it serves the second. The run then completes: both
// erased, B untouched.
func TestOffboardAllRecordsEverySuspensionFirst(t *testing.T) {
	a, b, c := tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantC
	ctx := context.Background()
	for _, record := range []bool{false, true} {
		f := newFamilies()
		for _, id := range []tenancy.ID{a, b, c} {
			f.fill(id)
		}
		first := f.run(t)
		var oo modules.OffboardOptions
		if record {
			oo.RecordSuspended = f.recordSuspended
		}
		paused, resume := f.pauseAt("offboard a")
		done := make(chan migrate.Report, 1)
		go func() { done <- first.OffboardAllWith(ctx, []tenancy.ID{a, c}, migrate.Options{Concurrency: 1}, oo) }()
		<-paused

		second := f.run(t)
		var served []tenancy.ID
		for _, id := range []tenancy.ID{a, c} {
			if err := second.Check(id, "kv", "a", "docs"); err == nil {
				served = append(served, id)
			} else if tenancy.CodeOf(err) != tenancy.CodeTenantSuspended {
				t.Fatalf("checking %v in the new process: %v", id, err)
			}
		}
		if err := second.Check(b, "kv", "a", "docs"); err != nil {
			t.Fatalf("B, not offboarded, in the new process: %v", err)
		}
		close(resume)
		rep := <-done
		if rep.Done != 2 || len(rep.Failures) != 0 {
			t.Fatalf("record %v: the run: %+v", record, rep)
		}
		switch {
		case record && len(served) != 0:
			t.Fatalf("with RecordSuspended a process started mid-run serves %v", served)
		case !record && len(served) == 0:
			t.Fatal("the control: without RecordSuspended the new process should not know the run's tenants are suspended")
		}
		for _, id := range []tenancy.ID{a, c} {
			if left := f.snapshot(id); len(left) != 0 {
				t.Fatalf("%v left after the run: %v", id, left)
			}
		}
		if len(f.snapshot(b)) != 4 {
			t.Fatalf("B after the run: %v", f.snapshot(b))
		}
	}
}

// TestOffboardAllUnrecordedTenantKeepsItsData: a tenant whose suspension
// cannot be recorded fails with nothing removed; the others are offboarded.
func TestOffboardAllUnrecordedTenantKeepsItsData(t *testing.T) {
	a, c := tenancytest.TenantA, tenancytest.TenantC
	f := newFamilies()
	f.fill(a)
	f.fill(c)
	tenants := f.run(t)
	refuse := func(ctx context.Context, id tenancy.ID) error {
		if id == c {
			return context.DeadlineExceeded
		}
		return f.recordSuspended(ctx, id)
	}
	rep := tenants.OffboardAllWith(context.Background(), []tenancy.ID{a, c}, migrate.Options{}, modules.OffboardOptions{RecordSuspended: refuse})
	if rep.Total != 2 || rep.Done != 1 || len(rep.Failures) != 1 || rep.Failures[0].Tenant != c {
		t.Fatalf("the run: %+v", rep)
	}
	if len(f.snapshot(a)) != 0 || len(f.snapshot(c)) != 4 {
		t.Fatalf("after the run: A %v, C %v", f.snapshot(a), f.snapshot(c))
	}
}
