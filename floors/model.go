// Package floors is the pure rules engine: it derives the tier each route of
// a module reaches from its wiring, checks it against the origin floor, the
// backend's ceiling and the module's declared floor, checks the workers that
// drain routes in the background, and renders the result as a matrix.
// Decide gives each route's Decision: the tier the matrix prints and the
// scope its adapter applies on every call, from one derivation. It
// does no I/O and knows no backend by name: each backend states its rules
// as data in a Backend value.
//
// It is for backend authors. An application never calls it: including an
// adapter's module in fx.New runs these checks, and `tenantwire matrix` and
// `tenantwire explain` print what they decide.
package floors

import "github.com/tenantwire/tenantwire/tenancy"

// Kind names a route kind within a backend, such as "document" or "outbox".
type Kind string

// Backend is what a backend can reach and how its route kinds derive their
// tier. Enforcement, the CLI and the docs all read the same value.
type Backend struct {
	Name    string
	Ceiling tenancy.Tier
	// Kinds holds every route kind the backend ships. A route of a kind
	// missing here is refused (wiring_invalid): the rules must be stated.
	Kinds map[Kind]KindRule
	// Codes documents the codes only this backend raises, each named
	// "<Name>_...": `tenantwire errors` and `tenantwire explain` read them
	// from the backend, so a new backend states its own codes here.
	Codes []CodeDoc
}

// KindRule states a route kind's exceptions to the default derivation rule.
// The zero value is the default rule over every relation the route names.
type KindRule struct {
	// Summary is one line for the matrix: what the kind is.
	Summary string
	// Relations lists the relation roles that count towards namespace,
	// such as "read", "write" and "history". Empty means every relation the
	// route names counts.
	Relations []string
	// ResolverCountsOnlyWhenTenantAware: the route passes its resolver the
	// tenant only when it is tenant-aware, so a per-tenant relation counts
	// only then; otherwise it names one container shared by every tenant
	// and needs no tenant bound (Decide). PostgreSQL inbox, idempotency
	// store and outbox; MongoDB outbox.
	ResolverCountsOnlyWhenTenantAware bool
	// NeverNamespace: the kind has no per-route namespace (Redis streams,
	// Postgres hub search); a resolver never lifts it to namespace.
	NeverNamespace bool
	// NoTagged: the backend has no row filter for this kind (Kafka topics);
	// a tenant-aware flag is refused rather than silently ignored.
	NoTagged bool
	// TaggedNeedsScopedRelations: tenant-aware reaches tagged only when every
	// relation is itself scoped (federated search over hub legs); otherwise
	// the route reaches none.
	TaggedNeedsScopedRelations bool
	// Origin is the kind's own statement origin (dynamic read: compiled).
	// A route's effective origin is the stronger of this and its own.
	Origin tenancy.Origin
	// Fleet marks a deployment-wide kind: always tenant-global.
	Fleet bool
	// Note is an exception worth printing in the matrix.
	Note string
}

// Relation is one container a route names, in a role the kind's rule knows.
type Relation struct {
	// Role is the relation's part in the route ("read", "write", "index").
	Role string
	// Name is the static container name, or the resolver's base name.
	Name string
	// PerTenant: the container is named per tenant by a resolver.
	PerTenant bool
	// Scoped: the relation separates tenants by itself (a hub leg that is
	// tenant-aware or per-tenant). Read only by TaggedNeedsScopedRelations.
	Scoped bool
}

// Route is one route's wiring, as the adapter built it from its config.
type Route struct {
	Name        string
	Kind        Kind
	Relations   []Relation
	TenantAware bool
	// Routed: the route runs on a per-tenant client.
	Routed bool
	Origin tenancy.Origin
	// Fleet and TenantGlobal mark deployment-wide routes; they must not be
	// tenant-scoped and are left out of the declared floor.
	Fleet        bool
	TenantGlobal bool
}

// Binding is how a background worker binds tenants.
type Binding uint8

const (
	// Unbound: the worker reads and handles with no tenant bound.
	Unbound Binding = iota
	// PerRow: the worker reads unbound and binds each item's own tenant
	// while handling it (the outbox relay).
	PerRow
	// FromHeaders: the worker reads unbound and binds the tenant carried in
	// each message's headers (explicit opt-in: headers are untrusted).
	FromHeaders
	// Sharded: one bound pass per assigned tenant; reads are bound.
	Sharded
)

var bindingNames = [...]string{"unbound", "per-row", "from-headers", "sharded"}

func (b Binding) String() string {
	if int(b) < len(bindingNames) {
		return bindingNames[b]
	}
	return "binding(?)"
}

// readsBound reports whether the worker reads its resource with a tenant
// bound. Only a sharded worker does; the others read the whole resource.
func (b Binding) readsBound() bool { return b == Sharded }

// Worker is a background reader: a relay, consumer, sweep or scheduler.
type Worker struct {
	Name string
	// Module and Route name the route the worker drains.
	Module  string
	Route   string
	Binding Binding
}

// Module is one backend module's wiring: what enforcement checks.
type Module struct {
	Name    string
	Backend Backend
	// Floor is the declared RequiredIsolation; None enforces nothing.
	Floor  tenancy.Tier
	Routes []Route
	// ConnBudget, when positive, caps WorstCaseConns.
	ConnBudget int
	// WorstCaseConns is the most connections the module's clients can open
	// (routed: pool bound × per-pool maximum). Zero when unknown or N/A.
	WorstCaseConns int
	// Placement is the tier this module serves as one placement of a
	// module that offers several (None otherwise): its routes keep the
	// tenant marker the tagged placement needs, which is then no warning.
	Placement tenancy.Tier
}

// Unbound is the refusal of a tenant-scoped call of route that ran with no
// tenant bound: tenant_unbound naming the module, backend and route, so
// every adapter reports it with the same fields.
func (b Backend) Unbound(module, route string) *tenancy.Error {
	e := tenancy.Unbound()
	e.Module, e.Backend, e.Route = module, b.Name, route
	return e
}

// WiringInvalid is the refusal of a route whose options cannot be wired at
// all (a bad name, a missing client), raised by the backend's module
// before any tier is rated.
func (b Backend) WiringInvalid(module, route, detail, fix string) *tenancy.Error {
	return &tenancy.Error{Code: tenancy.CodeWiringInvalid, Module: module, Backend: b.Name,
		Route: route, Detail: detail, Fix: fix}
}
