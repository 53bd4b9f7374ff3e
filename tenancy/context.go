package tenancy

import "context"

type bindingKey struct{}

// binding is the value stored in a context: either a tenant or the explicit
// tenant-global scope, never both.
type binding struct {
	id     ID
	global bool
}

// WithTenant binds id into ctx. It panics on the zero ID: binding "no
// tenant" is a programming error, and failing loudly is the closed failure.
func WithTenant(ctx context.Context, id ID) context.Context {
	if id.IsZero() {
		panic("tenancy: WithTenant called with the zero ID")
	}
	return context.WithValue(ctx, bindingKey{}, binding{id: id})
}

// WithGlobal marks ctx as deployment-wide work (a fleet heartbeat, a leader
// lock). It is distinct from "no tenant bound": tenant-global routes accept
// it, tenant-scoped routes refuse it exactly as they refuse an unbound one.
func WithGlobal(ctx context.Context) context.Context {
	return context.WithValue(ctx, bindingKey{}, binding{global: true})
}

// FromContext returns the tenant bound to ctx. It does not allocate.
func FromContext(ctx context.Context) (ID, bool) {
	b, ok := ctx.Value(bindingKey{}).(binding)
	if !ok || b.global {
		return ID{}, false
	}
	return b.id, true
}

// IsGlobal reports whether ctx is in the explicit tenant-global scope.
func IsGlobal(ctx context.Context) bool {
	b, ok := ctx.Value(bindingKey{}).(binding)
	return ok && b.global
}

// Require returns the tenant bound to ctx, or a tenant_unbound error. It
// never falls back to the default tenant.
func Require(ctx context.Context) (ID, error) {
	if id, ok := FromContext(ctx); ok {
		return id, nil
	}
	return ID{}, Unbound()
}

// Unbound returns a fresh tenant_unbound error.
func Unbound() *Error {
	return &Error{
		Code:   CodeTenantUnbound,
		Detail: "a tenant-scoped call ran with no tenant bound in its context",
		Fix:    "bind the tenant at the request boundary (tenancy.WithTenant or the HTTP middleware); a background worker binds it from the resource it drains",
	}
}
