package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ArchiveFormat and ArchiveVersion name the archive format of
// docs/archive.md that Tenants.Export writes and Tenants.Import reads.
const (
	ArchiveFormat  = "tenantwire-archive"
	ArchiveVersion = 1
)

// Record is one record of a tenant's data in an archive. It names no
// tenant: Key is relative to the tenant's own space (a Redis key without
// the tenant's prefix, a row without its tenant column), and an import
// binds the target tenant itself.
type Record struct {
	// Module is filled by the kit.
	Module string `json:"module"`
	// Route is the route whose data the record is (for the memory
	// backend, the container).
	Route string `json:"route"`
	// Family is the route's relation or family ("write", "history",
	// "keys"), as the backend declares it.
	Family string `json:"family,omitempty"`
	// Kind is what the record is on its backend ("row", "document",
	// "key").
	Kind string `json:"kind"`
	Key  string `json:"key,omitempty"`
	// Value is the record in JSON; Native, when it has no JSON form, the
	// backend's own encoding (base64 in the archive). One of them is set.
	Value  json.RawMessage `json:"value,omitempty"`
	Native []byte          `json:"native,omitempty"`
	// Meta is what the backend keeps beside the value (a version, a TTL
	// in milliseconds), as it documents.
	Meta map[string]string `json:"meta,omitempty"`
}

// ArchiveOut is what a module's export writes to: its records, in a
// stable order, one section (route, family) after the other.
type ArchiveOut interface {
	// Emit writes one record.
	Emit(Record) error
	// Skip says that route's data is left out, and why (a tenant-global
	// route, a backend that cannot export it).
	Skip(route, reason string)
	// Tier declares the tier route reaches, for the manifest.
	Tier(route string, t tenancy.Tier)
	// Snapshot says how consistent the module's records are ("repeatable
	// read transaction", "none: keys are read one by one").
	Snapshot(how string)
}

// ArchiveIn is a module's records of a verified archive, in archive
// order.
type ArchiveIn interface {
	// Next returns the next record; false after the module's last.
	Next() (Record, bool, error)
	// Sections is the module's sections of the verified manifest, so a
	// backend that cannot write in one transaction checks that it knows
	// every (route, family) before it writes anything.
	Sections() []ArchiveSection
	// Version is the module's migration version the archive was
	// exported at.
	Version() int64
}

// Archiver is a Target (or a module) that can export a tenant's data and
// import it into another tenant. Import fills an empty tenant only
// (ArchiveTargetNotEmpty otherwise) and names no tenant but the one it is
// given: the records name none.
type Archiver interface {
	Export(ctx context.Context, tenant tenancy.ID, out ArchiveOut) error
	Import(ctx context.Context, tenant tenancy.ID, in ArchiveIn) error
}

// ForwardImporter is an Archiver that also imports an archive exported
// at an older migration version of the module: it writes the records
// into the tenant's own containers as they were at that version (the
// steps before), migrates them forward (the steps after), and leaves the
// tenant at the app's version, all or nothing.
type ForwardImporter interface {
	Archiver
	// ImportsForward reports whether the target's containers are the
	// tenant's own, where the steps run per tenant.
	ImportsForward() bool
	ImportForward(ctx context.Context, tenant tenancy.ID, in ArchiveIn, before, after Set) error
}

// Archives reports whether the target can export and import (an
// Archiver).
func (r *Runner) Archives() bool { _, ok := r.t.(Archiver); return ok }

// Version is the newest migration version of the module's set: the
// version a migrated tenant is at, which an archive records.
func (r *Runner) Version() int64 { return r.s.Set.Latest() }

// Export writes tenant's records through out.
func (r *Runner) Export(ctx context.Context, tenant tenancy.ID, out ArchiveOut) error {
	if tenant.IsZero() {
		return r.unbound()
	}
	a, ok := r.t.(Archiver)
	if !ok {
		out.Skip("*", "the "+r.s.Backend+" backend cannot export yet")
		return nil
	}
	return a.Export(ctx, tenant, out)
}

// Import writes in's records into tenant: as they are when the archive
// is at the module's version, migrated forward when it is at an older
// one (ImportsFrom).
func (r *Runner) Import(ctx context.Context, tenant tenancy.ID, in ArchiveIn) error {
	if tenant.IsZero() {
		return r.unbound()
	}
	a, ok := r.t.(Archiver)
	if !ok {
		return ArchiveMismatch(r.s.Module, r.s.Backend, "", "the "+r.s.Backend+" backend cannot import", "import the archive into an app whose module is on a backend that can")
	}
	v := in.Version()
	if v == r.Version() {
		return a.Import(ctx, tenant, in)
	}
	if err := r.ImportsFrom(v); err != nil {
		return err
	}
	i := 0
	for i < len(r.s.Set) && r.s.Set[i].Version <= v {
		i++
	}
	return r.t.(ForwardImporter).ImportForward(ctx, tenant, in, r.s.Set[:i], r.s.Set[i:])
}

// ImportsFrom is nil when the module imports an archive exported at
// migration version v: its own version, or an older one of its set when
// its target migrates archives forward (a ForwardImporter whose steps
// run in each tenant's own containers). Otherwise it is the refusal:
// archive_version_ahead for a newer archive, archive_mismatch for one the
// module cannot bring to its version.
func (r *Runner) ImportsFrom(v int64) error {
	latest := r.Version()
	switch {
	case v == latest:
		return nil
	case v > latest:
		return ArchiveVersionAhead(r.s.Module, r.s.Backend, v, latest)
	}
	fi, ok := r.t.(ForwardImporter)
	if !ok || !fi.ImportsForward() || !r.s.PerTenant || r.s.Shared {
		return ArchiveMismatch(r.s.Module, r.s.Backend, "", fmt.Sprintf("the archive is at migration version %d, the app at %d, and the module's migrations do not run in each tenant's own containers, so the records cannot be migrated forward", v, latest),
			"import into an app at the archive's migration version, then migrate it")
	}
	if v != 0 && !slices.ContainsFunc(r.s.Set, func(st Step) bool { return st.Version == v }) {
		return ArchiveMismatch(r.s.Module, r.s.Backend, "", fmt.Sprintf("the archive is at migration version %d, which the module's migrations do not have", v),
			"import into an app whose migrations hold the archive's version")
	}
	return nil
}

// ArchiveVersionAhead is archive_version_ahead: the archive of module was
// exported at migration version v, newer than the app's latest.
func ArchiveVersionAhead(module, backend string, v, latest int64) error {
	return &tenancy.Error{Code: tenancy.CodeArchiveVersionAhead, Module: module, Backend: backend,
		Detail: fmt.Sprintf("the archive is at migration version %d, newer than the app's %d; a newer schema's records cannot be taken back", v, latest),
		Fix:    fmt.Sprintf("import with a release of the app whose module %s has migrations up to version %d at least", module, v)}
}

// ArchiveInvalid is archive_invalid: the input is not a whole archive.
func ArchiveInvalid(detail string) error {
	return &tenancy.Error{Code: tenancy.CodeArchiveInvalid, Detail: detail,
		Fix: "import the whole archive as Tenants.Export wrote it (docs/archive.md); export the tenant again if it was cut short"}
}

// ArchiveMismatch is archive_mismatch for module's route on backend (any
// may be empty: the manifest's own checks name no backend).
func ArchiveMismatch(module, backend, route, detail, fix string) error {
	return &tenancy.Error{Code: tenancy.CodeArchiveMismatch, Module: module, Backend: backend, Route: route, Detail: detail, Fix: fix}
}

// ArchiveTargetNotEmpty is archive_target_not_empty: module already holds
// data of tenant (where says where it found some).
func ArchiveTargetNotEmpty(module, backend string, tenant tenancy.ID, where string) error {
	return &tenancy.Error{Code: tenancy.CodeArchiveTargetNotEmpty, Module: module, Backend: backend,
		Detail: fmt.Sprintf("tenant %s already holds data in %s; an import fills an empty tenant only", tenant, where),
		Fix:    "import into a freshly provisioned tenant, or offboard the target and provision it again first"}
}

// RecordsOf ranges over in's records, ending at the module's last; an
// error is yielded once, last.
func RecordsOf(in ArchiveIn) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for {
			r, ok, err := in.Next()
			if err != nil {
				yield(Record{}, err)
				return
			}
			if !ok || !yield(r, nil) {
				return
			}
		}
	}
}
