package migrate_test

import (
	"context"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// forwardTarget records what the runner hands a forward import.
type forwardTarget struct {
	*memTarget
	forward       bool
	plain         int
	before, after []int64
}

func (f *forwardTarget) Export(context.Context, tenancy.ID, migrate.ArchiveOut) error { return nil }
func (f *forwardTarget) Import(context.Context, tenancy.ID, migrate.ArchiveIn) error {
	f.plain++
	return nil
}
func (f *forwardTarget) ImportsForward() bool { return f.forward }
func (f *forwardTarget) ImportForward(_ context.Context, _ tenancy.ID, _ migrate.ArchiveIn, before, after migrate.Set) error {
	for _, st := range before {
		f.before = append(f.before, st.Version)
	}
	for _, st := range after {
		f.after = append(f.after, st.Version)
	}
	return nil
}

// archivedAt is a module's records of an archive at version v, none.
type archivedAt int64

func (archivedAt) Next() (migrate.Record, bool, error) { return migrate.Record{}, false, nil }
func (archivedAt) Sections() []migrate.ArchiveSection  { return nil }
func (v archivedAt) Version() int64                    { return int64(v) }

// TestRunnerImportsByVersion: the module's own version imports as it is;
// an older one of its steps goes to the forward import split at that
// step; a newer one is archive_version_ahead; one the steps do not have,
// one on a shared target, or one the target cannot take forward are
// archive_mismatch, and the target is not called.
func TestRunnerImportsByVersion(t *testing.T) {
	set, err := migrate.Load(fstest.MapFS{"1_a.sql": {Data: []byte("a")}, "3_c.sql": {Data: []byte("c")}, "4_d.sql": {Data: []byte("d")}}, "sql")
	if err != nil {
		t.Fatal(err)
	}
	ctx, tenant := context.Background(), tenancytest.TenantA
	runner := func(forward, shared bool) (*migrate.Runner, *forwardTarget) {
		f := &forwardTarget{memTarget: newMem(), forward: forward}
		return migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: set, PerTenant: !shared, Shared: shared}, f), f
	}
	r, f := runner(true, false)
	if err := r.Import(ctx, tenant, archivedAt(4)); err != nil || f.plain != 1 || f.before != nil {
		t.Fatalf("an archive at the module's version: %v, %d plain imports, forward %v", err, f.plain, f.before)
	}
	for _, c := range []struct {
		v             int64
		before, after string
	}{{3, "[1 3]", "[4]"}, {1, "[1]", "[3 4]"}, {0, "[]", "[1 3 4]"}} {
		r, f := runner(true, false)
		if err := r.Import(ctx, tenant, archivedAt(c.v)); err != nil {
			t.Fatalf("version %d: %v", c.v, err)
		}
		if got := fmt.Sprint(f.before) + fmt.Sprint(f.after); got != c.before+c.after || f.plain != 0 {
			t.Errorf("version %d: before %v after %v (%d plain), want %s %s", c.v, f.before, f.after, f.plain, c.before, c.after)
		}
	}
	refused := []struct {
		v               int64
		forward, shared bool
		code            tenancy.Code
		detail          string
	}{
		{5, true, false, tenancy.CodeArchiveVersionAhead, "version 5, newer than the app's 4"},
		{2, true, false, tenancy.CodeArchiveMismatch, "version 2, which the module's migrations do not have"},
		{3, true, true, tenancy.CodeArchiveMismatch, "do not run in each tenant's own containers"},
		{3, false, false, tenancy.CodeArchiveMismatch, "do not run in each tenant's own containers"},
	}
	for _, c := range refused {
		r, f := runner(c.forward, c.shared)
		err := r.Import(ctx, tenant, archivedAt(c.v))
		_ = tenancytest.RequireCode(t, err, c.code, "mem", "m", "", c.detail)
		if f.plain != 0 || f.before != nil || f.after != nil {
			t.Errorf("version %d refused, yet the target imported", c.v)
		}
		if ierr := r.ImportsFrom(c.v); tenancy.CodeOf(ierr) != c.code {
			t.Errorf("ImportsFrom(%d) = %v, want %s as Import", c.v, ierr, c.code)
		}
	}
}
