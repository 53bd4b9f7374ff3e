package modules

import (
	"context"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ActiveTenantsOf is the registry's ready tenants less the suspended ones
// (and the ones being offboarded, which are suspended first): the tenant
// set a sharded worker follows, so a suspended tenant's shard stops at the
// next read of the set, without a restart, and no worker keeps serving
// it. A nil s leaves the set as the registry lists it.
func ActiveTenantsOf(reg migrate.Registry, s *Suspensions) func(context.Context) ([]tenancy.ID, error) {
	return s.Active(migrate.TenantsOf(reg))
}

// Active is src less the tenants suspended when it is read.
func (t *Suspensions) Active(src func(context.Context) ([]tenancy.ID, error)) func(context.Context) ([]tenancy.ID, error) {
	return func(ctx context.Context) ([]tenancy.ID, error) {
		ids, err := src(ctx)
		if err != nil || t == nil {
			return ids, err
		}
		out := ids[:0:0]
		for _, id := range ids {
			if !t.Suspended(id) {
				out = append(out, id)
			}
		}
		return out, nil
	}
}
