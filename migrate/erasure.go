package migrate

import (
	"context"

	"github.com/tenantwire/tenantwire/tenancy"
)

// FamilyKind is what a family of a tenant's data is on its server.
type FamilyKind string

// The kinds of family a backend declares.
const (
	KindTable      FamilyKind = "table"             // a table (or per-tenant table) the tenant owns whole
	KindRows       FamilyKind = "rows-with-marker"  // rows of a shared table carrying the tenant's marker
	KindKeys       FamilyKind = "key-pattern"       // keys matching a pattern
	KindCollection FamilyKind = "collection"        // a collection, or documents carrying the marker in one
	KindTopic      FamilyKind = "topic"             // a per-tenant topic
	KindNodes      FamilyKind = "nodes"             // graph nodes carrying the tenant property
	KindDatabase   FamilyKind = "database"          // a per-tenant database
	KindSchema     FamilyKind = "schema"            // a per-tenant schema
	KindRole       FamilyKind = "role"              // a per-tenant role
	KindHistory    FamilyKind = "history"           // a registry entry or migration history
	KindCache      FamilyKind = "in-process cache"  // state kept in this process
	KindRecords    FamilyKind = "records-by-header" // records carrying the tenant in a shared log
)

// Family is one place a backend stores a tenant's data: the unit of its
// declared inventory, which its teardown removes and its verifier scans.
type Family struct {
	// Name is the family's name within its module ("route keys",
	// "rows orders.items").
	Name string
	Kind FamilyKind
	// Where is where on the server the family lives for the tenant (a
	// SCAN pattern, a table, a topic), as the verifier looked.
	Where string
	// Route is the route whose data the family holds, when it is one
	// route's.
	Route string
}

// Leftover is a family in which a verifier still found the tenant's data
// after its teardown.
type Leftover struct {
	Family Family
	// Count is how many records it found (at least 1; a scan may stop
	// counting early).
	Count int64
	// Sample names one of them (a key, a table), to look at.
	Sample string
}

// Kept is a family of the tenant's data the backend cannot remove, and
// why (a shared log's records stay until its retention removes them).
type Kept struct {
	Family Family
	Reason string
}

// Erasure is a verifier's proof: the families it scanned for the tenant,
// what it found left in them (none when the tenant is erased), and what
// it cannot remove at all (which a report states but does not fail on).
type Erasure struct {
	Checked []Family
	Left    []Leftover
	Kept    []Kept
}

// Keep records that f holds the tenant's data the backend cannot remove,
// for reason.
func (e *Erasure) Keep(f Family, reason string) {
	e.Kept = append(e.Kept, Kept{Family: f, Reason: reason})
}

// Check records that f was scanned and found n records (sample one).
func (e *Erasure) Check(f Family, n int64, sample string) {
	e.Checked = append(e.Checked, f)
	if n > 0 {
		e.Left = append(e.Left, Leftover{Family: f, Count: n, Sample: sample})
	}
}

// Verifier is a Target that can prove a teardown: it scans, on the
// server, every family it declares for the tenant, the same list its
// Teardown walks.
type Verifier interface {
	Verify(ctx context.Context, tenant tenancy.ID) (Erasure, error)
}

// Verifies reports whether the target declares its families and can
// prove a teardown (a Verifier).
func (r *Runner) Verifies() bool { _, ok := r.t.(Verifier); return ok }

// Verify scans every family the target declares for tenant. A target
// that declares none (Verifies is false) has nothing to check.
func (r *Runner) Verify(ctx context.Context, tenant tenancy.ID) (Erasure, error) {
	if tenant.IsZero() {
		return Erasure{}, r.unbound()
	}
	v, ok := r.t.(Verifier)
	if !ok {
		return Erasure{}, nil
	}
	return v.Verify(ctx, tenant)
}
