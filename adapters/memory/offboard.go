package memory

import (
	"context"
	"strings"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// memFamily is one family of what the store holds for a tenant. erase
// walks the tenant's records of it, dropping them when drop is set, and
// returns how many it found and one of their containers: offboard and
// verify walk memFamilies, one declaration.
type memFamily struct {
	name  string
	kind  migrate.FamilyKind
	erase func(s *store, suffix string, tenant tenancy.ID, drop bool) (int64, string)
}

// memFamilies is every map of store holding records: a new one is
// declared here, or offboarding leaves its records.
var memFamilies = []memFamily{
	{"documents", migrate.KindCollection, func(s *store, suffix string, t tenancy.ID, drop bool) (int64, string) {
		return eraseTenant(s.docs, suffix, t, drop)
	}},
	{"keys", migrate.KindKeys, func(s *store, suffix string, t tenancy.ID, drop bool) (int64, string) {
		return eraseTenant(s.kv, suffix, t, drop)
	}},
	// A shared stream keeps its offsets: the tenant's messages stay as
	// empty entries that no tenant reads, so other consumers' offsets hold.
	{"stream messages", migrate.KindRows, func(s *store, suffix string, t tenancy.ID, drop bool) (n int64, sample string) {
		for name, msgs := range s.streams {
			if strings.HasSuffix(name, suffix) {
				n, sample = n+int64(len(msgs))+1, name
				if drop {
					delete(s.streams, name)
				}
				continue
			}
			for i := range msgs {
				if msgs[i].tenant == t && !msgs[i].dropped {
					n, sample = n+1, name
					if drop {
						msgs[i] = Message{Offset: msgs[i].Offset, dropped: true}
					}
				}
			}
		}
		return n, sample
	}},
}

// offboard drops every per-tenant container of tenant ("<base>.<hex>":
// base names hold no dot, so no static container or other tenant's
// matches) and every record tagged with tenant in the shared ones, in
// every family of memFamilies.
func (s *store) offboard(_ context.Context, tenant tenancy.ID) error {
	if err := migrate.CheckTeardown(s.teardown, tenant); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range memFamilies {
		f.erase(s, "."+tenant.Hex(), tenant, true)
	}
	return nil
}

// verify counts what is left of tenant in every family of memFamilies.
func (s *store) verify(_ context.Context, tenant tenancy.ID) (migrate.Erasure, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var e migrate.Erasure
	for _, f := range memFamilies {
		n, sample := f.erase(s, "."+tenant.Hex(), tenant, false)
		e.Check(migrate.Family{Name: f.name, Kind: f.kind, Where: "<container>." + tenant.Hex() + " and tagged records"}, n, sample)
	}
	return e, nil
}

// eraseTenant walks the containers of m named with suffix (the tenant's
// own) and the tenant's records in every other one, removing them when
// drop is set.
func eraseTenant[V any](m map[string]map[entryKey]V, suffix string, tenant tenancy.ID, drop bool) (n int64, sample string) {
	for name, records := range m {
		if strings.HasSuffix(name, suffix) {
			n, sample = n+int64(len(records))+1, name
			if drop {
				delete(m, name)
			}
			continue
		}
		for k := range records {
			if k.tenant == tenant {
				n, sample = n+1, name
				if drop {
					delete(records, k)
				}
			}
		}
	}
	return n, sample
}
