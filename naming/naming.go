// Package naming is the one value every adapter names a route's container
// with (a table or its schema, a collection or its database, a key
// namespace, a topic, a graph database): one container every tenant
// shares, or one per tenant. A per-tenant name is what reaches namespace;
// each backend's page says how it spells one (the base, its separator and
// the tenant's 32 lowercase hex digits, floors.TenantSpace).
package naming

import "github.com/tenantwire/tenantwire/tenancy"

// Name names a route's container. The zero value names nothing: the
// adapter's default, or a refusal where a name is required.
type Name struct {
	base      string
	perTenant bool
	// fn is a pointer so that names compare with ==.
	fn *func(tenancy.ID) (string, error)
}

// Shared is the container every tenant shares, named name.
func Shared(name string) Name { return Name{base: name} }

// PerTenant is a container per tenant, named from base and the tenant's
// 32 hex digits the backend's way: injective by construction.
func PerTenant(base string) Name { return Name{base: base, perTenant: true} }

// Func is a container per tenant named by fn, for a naming scheme of your
// own; fn must be injective (two tenants never get one name), and an
// error from it fails the call. Backends that spell names themselves
// refuse it.
func Func(fn func(tenancy.ID) (string, error)) Name { return Name{perTenant: true, fn: &fn} }

// Base is the shared name, or the base of a per-tenant one.
func (n Name) Base() string { return n.base }

// PerTenant reports whether each tenant has its own container.
func (n Name) PerTenant() bool { return n.perTenant }

// IsZero reports whether n names nothing.
func (n Name) IsZero() bool { return n.base == "" && n.fn == nil }

// Func is the resolver Func was given; nil otherwise.
func (n Name) Func() func(tenancy.ID) (string, error) {
	if n.fn == nil {
		return nil
	}
	return *n.fn
}
