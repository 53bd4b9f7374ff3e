package modules

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// SkippedNoExport is an archive's skip reason for a module that cannot
// export.
const SkippedNoExport = "the module cannot export its data"

// Export writes one archive of everything tenant owns across every
// module to w (docs/archive.md): each module's records as it reads them
// (a PostgreSQL module in one REPEATABLE READ transaction), then the
// manifest with every section's count and sha256. Records stream: no
// module holds the tenant in memory. The tenant keeps being served;
// suspend it first for an archive no write overlaps.
func (t *Tenants) Export(ctx context.Context, tenant tenancy.ID, w io.Writer) error {
	if tenant.IsZero() {
		return tenancy.Unbound()
	}
	aw, err := migrate.NewArchiveWriter(w, tenant, time.Now())
	if err != nil {
		return err
	}
	for _, s := range t.states {
		aw.Module(migrate.ArchiveModule{Module: s.Module, Backend: s.Backend, Version: s.Version})
		if s.Export == nil {
			aw.Skip("*", SkippedNoExport)
			continue
		}
		if !t.holds(s, tenant) {
			aw.Skip("*", placedElsewhere(s))
			continue
		}
		if err := s.Export(ctx, tenant, aw); err != nil {
			return fmt.Errorf("%s (%s): exporting tenant %s: %w", s.Module, s.Backend, tenant, err)
		}
	}
	return aw.Close()
}

// Import restores an archive of Export into tenant, which must be
// provisioned and empty: the same tenant or another one. It reads the
// whole archive first, into a temporary file, and checks its form and
// every section's count and sha256, and that its modules, backends and
// migration versions are the app's: a truncated or altered archive is
// refused (archive_invalid, archive_mismatch) before anything is
// written. An archive at an older migration version of a module is
// migrated forward where the module can (migrate.ForwardImporter: a
// PostgreSQL module whose migrations run in each tenant's schema or own
// database), and refused otherwise; one at a newer version is
// archive_version_ahead. Records name no tenant; each module writes them
// into tenant only, and refuses a tenant that already holds data
// (archive_target_not_empty). A PostgreSQL or memory module imports in
// one transaction, so an interrupted import leaves it empty and a rerun
// completes it; see docs/archive.md for the others.
func (t *Tenants) Import(ctx context.Context, tenant tenancy.ID, r io.Reader) error {
	if tenant.IsZero() {
		return tenancy.Unbound()
	}
	// Imports into one tenant run one at a time in this process: the
	// second then finds the tenant filled (archive_target_not_empty)
	// instead of passing the same emptiness check and writing the
	// records twice where a backend cannot refuse a duplicate.
	done, err := t.importing(ctx, tenant)
	if err != nil {
		return err
	}
	defer done()
	spool, err := os.CreateTemp("", "tenantwire-import-*")
	if err != nil {
		return err
	}
	defer func() { spool.Close(); os.Remove(spool.Name()) }()
	_, m, err := migrate.ReadArchive(r, spool)
	if err != nil {
		return err
	}
	if err := t.matches(m); err != nil {
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	recs := migrate.NewRecords(spool, m)
	for _, am := range m.Modules {
		s := t.state(am.Module)
		in := recs.Module(am.Module)
		if s.Placement != nil {
			// One placement of a module exported the tenant's records; the
			// placement holding the target tenant imports them.
			if len(in.Sections()) == 0 {
				continue
			}
			if s = t.holderOf(s.Placement.Module, tenant); s == nil {
				return moveInvalid(am.Module, am.Backend, fmt.Sprintf("no placement of module %q holds tenant %s", am.Module, tenant),
					"record one of the module's placements for the tenant and provision it there")
			}
		}
		if s.Import == nil || !t.holds(s, tenant) {
			continue // listed as skipped by matches
		}
		if err := s.Import(ctx, tenant, in); err != nil {
			return fmt.Errorf("%s (%s): importing into tenant %s: %w", s.Module, s.Backend, tenant, err)
		}
		if _, more, err := in.Next(); more || err != nil {
			return fmt.Errorf("%s (%s): the import left records unread (%v)", s.Module, s.Backend, err)
		}
	}
	return nil
}

// importing waits until no other import into tenant runs in this
// process, and marks one under way until done is run.
func (t *Tenants) importing(ctx context.Context, tenant tenancy.ID) (done func(), err error) {
	for {
		t.mu.Lock()
		busy, ok := t.imports[tenant]
		if !ok {
			if t.imports == nil {
				t.imports = map[tenancy.ID]chan struct{}{}
			}
			ch := make(chan struct{})
			t.imports[tenant] = ch
			t.mu.Unlock()
			return func() {
				t.mu.Lock()
				delete(t.imports, tenant)
				t.mu.Unlock()
				close(ch)
			}, nil
		}
		t.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (t *Tenants) state(module string) *TenantState {
	for _, s := range t.states {
		if s.Module == module {
			return s
		}
	}
	return nil
}

// matches checks that an archive's modules are the app's: the same
// backends and migration versions, and every module that can import
// present in the archive.
func (t *Tenants) matches(m migrate.Manifest) error {
	listed := map[string]bool{}
	for _, am := range m.Modules {
		listed[am.Module] = true
		s := t.state(am.Module)
		switch {
		case s == nil:
			return migrate.ArchiveMismatch(am.Module, am.Backend, "", "the archive holds module "+am.Module+", which the app does not have", "import into an app with the archive's modules")
		case s.Backend != am.Backend:
			return migrate.ArchiveMismatch(am.Module, s.Backend, "", fmt.Sprintf("the archive's module is on %s, the app's on %s", am.Backend, s.Backend), "import into an app whose module is on the archive's backend")
		case am.Version > s.Version:
			return migrate.ArchiveVersionAhead(am.Module, s.Backend, am.Version, s.Version)
		case am.Version != s.Version && s.ImportsFrom == nil:
			return migrate.ArchiveMismatch(am.Module, s.Backend, "", fmt.Sprintf("the archive is at migration version %d, the app at %d", am.Version, s.Version), "import into an app at the archive's migration version, then migrate it")
		case am.Version != s.Version:
			if err := s.ImportsFrom(am.Version); err != nil {
				return err
			}
		}
	}
	for _, s := range t.states {
		if s.Import != nil && !listed[s.Module] {
			return migrate.ArchiveMismatch(s.Module, s.Backend, "", "the archive has no module "+s.Module, "import an archive exported from an app with the same modules")
		}
	}
	order := map[string]int{}
	for i, am := range m.Modules {
		order[am.Module] = i
	}
	last := 0
	for _, sec := range m.Sections {
		i, ok := order[sec.Module]
		if !ok || i < last {
			return migrate.ArchiveMismatch(sec.Module, "", sec.Route, "the archive's records of module "+sec.Module+" are not where its manifest lists the module", "import an unaltered archive")
		}
		last = i
		if s := t.state(sec.Module); s.Import == nil && sec.Records > 0 {
			return migrate.ArchiveMismatch(sec.Module, s.Backend, sec.Route, "the app's module cannot import records", "import into an app whose module's backend can import")
		}
	}
	return nil
}
