package memory

import (
	"context"
	"strings"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// AllowTeardown lets the module's part in Tenants.Offboard drop a
// tenant's records; without it offboarding reports migrate.ErrTeardownDisabled.
func AllowTeardown() Option { return optionFunc(func(c *config) { c.teardown = true }) }

// offboard drops every per-tenant container of tenant ("<base>.<hex>":
// base names hold no dot, so no static container or other tenant's
// matches) and every record tagged with tenant in the shared ones. A
// shared stream keeps its offsets: the tenant's messages stay as empty
// entries that no tenant reads, so other consumers' offsets hold.
func (s *store) offboard(_ context.Context, tenant tenancy.ID) error {
	if err := migrate.CheckTeardown(s.teardown, tenant); err != nil {
		return err
	}
	suffix := "." + tenant.Hex()
	s.mu.Lock()
	defer s.mu.Unlock()
	dropTenant(s.docs, suffix, tenant)
	dropTenant(s.kv, suffix, tenant)
	for name, msgs := range s.streams {
		if strings.HasSuffix(name, suffix) {
			delete(s.streams, name)
			continue
		}
		for i := range msgs {
			if msgs[i].tenant == tenant {
				msgs[i] = Message{Offset: msgs[i].Offset, dropped: true}
			}
		}
	}
	return nil
}

// dropTenant removes the containers of m named with suffix (the tenant's
// own) and the tenant's records in every other one.
func dropTenant[V any](m map[string]map[entryKey]V, suffix string, tenant tenancy.ID) {
	for name, records := range m {
		if strings.HasSuffix(name, suffix) {
			delete(m, name)
			continue
		}
		for k := range records {
			if k.tenant == tenant {
				delete(records, k)
			}
		}
	}
}
