package migrate

import (
	"context"

	"github.com/tenantwire/tenantwire/tenancy"
)

// State is a tenant's provisioning state in a registry.
type State string

const (
	// Provisioning: Provision started and has not finished (or crashed);
	// rerunning it is safe.
	Provisioning State = "provisioning"
	// Ready: provisioned.
	Ready State = "ready"
)

// Tenant is a registry entry.
type Tenant struct {
	ID    tenancy.ID
	State State
	// Versions is the migration version per module, as the migrator
	// last recorded it.
	Versions map[string]int64
}

// Registry lists the tenants a service has. postgres.NewRegistry is the
// default (a table); any source that can keep these four answers will do.
// Provision records a tenant (Put), a migration run records its version
// (SetVersion), teardown removes it.
type Registry interface {
	Put(ctx context.Context, tenant tenancy.ID, s State) error
	SetVersion(ctx context.Context, tenant tenancy.ID, module string, version int64) error
	Remove(ctx context.Context, tenant tenancy.ID) error
	List(ctx context.Context) ([]Tenant, error)
}

// ModuleRemover is a Registry that forgets one module's record of a
// tenant (its version), and the tenant with the last: modules sharing a
// registry then keep listing a tenant until the last of them has torn it
// down, so an offboard cut off between two modules leaves the tenant
// listed while a module still holds its data. A module's teardown uses
// it when its registry has it, else Remove.
type ModuleRemover interface {
	RemoveModule(ctx context.Context, tenant tenancy.ID, module string) error
}

// ReadyTenants is the IDs of the registry's provisioned tenants: the tenant
// set a relay or a sharded worker can be given.
func ReadyTenants(ctx context.Context, r Registry) ([]tenancy.ID, error) {
	all, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]tenancy.ID, 0, len(all))
	for _, t := range all {
		if t.State == Ready {
			out = append(out, t.ID)
		}
	}
	return out, nil
}

// staleTenants is the registered tenants whose recorded version of module
// is below need, in registry order.
func staleTenants(ctx context.Context, r Registry, module string, need int64) (stale []Tenant, err error) {
	all, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range all {
		if t.State == Ready && t.Versions[module] < need {
			stale = append(stale, t)
		}
	}
	return stale, nil
}

// TenantsOf is ReadyTenants as a tenant source: it is a shards.TenantsFunc,
// the Tenants of a relay's, consumer's or sweep's config, so sharded
// workers take their tenants from the registry.
func TenantsOf(r Registry) func(context.Context) ([]tenancy.ID, error) {
	return func(ctx context.Context) ([]tenancy.ID, error) { return ReadyTenants(ctx, r) }
}
