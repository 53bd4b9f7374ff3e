package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// An archived record's Route is its container's base name, and Meta says
// where it goes back: "scope" is "own" for a per-tenant container (named
// for the target tenant on import) or "tagged" for a shared one (the
// record tagged with the target tenant); "tag" is "1" when a per-tenant
// container's record is tagged too; "version" a document's version and
// "expires_ms" when a key expires (Unix milliseconds: the same in every
// export of it).
const (
	scopeOwn    = "own"
	scopeTagged = "tagged"
)

// export writes tenant's documents and keys, containers and keys in
// order, under the store's read lock: a consistent snapshot. Stream
// messages are skipped (their offsets are the stream's own).
func (s *store) export(_ context.Context, tenant tenancy.ID, out migrate.ArchiveOut) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out.Snapshot("the store's read lock: consistent")
	now := s.now()
	if err := exportFamily(s.docs, "documents", "document", tenant, out, func(e docEntry) (migrate.Record, bool) {
		return migrate.Record{Value: json.RawMessage(e.body), Meta: map[string]string{"version": strconv.FormatInt(e.version, 10)}}, true
	}); err != nil {
		return err
	}
	if err := exportFamily(s.kv, "keys", "key", tenant, out, func(e kvEntry) (migrate.Record, bool) {
		r := migrate.Record{Native: e.value, Meta: map[string]string{}}
		if !e.expires.IsZero() {
			if !now.Before(e.expires) {
				return r, false
			}
			r.Meta["expires_ms"] = strconv.FormatInt(e.expires.UnixMilli(), 10)
		}
		return r, true
	}); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(s.streams)) {
		own := strings.HasSuffix(name, "."+tenant.Hex())
		if own || slices.ContainsFunc(s.streams[name], func(m Message) bool { return m.tenant == tenant && !m.dropped }) {
			out.Skip(strings.TrimSuffix(name, "."+tenant.Hex()), "stream messages are not exported by the memory backend (their offsets are the stream's)")
		}
	}
	return nil
}

func exportFamily[V any](m map[string]map[entryKey]V, family, kind string, tenant tenancy.ID, out migrate.ArchiveOut, rec func(V) (migrate.Record, bool)) error {
	suffix := "." + tenant.Hex()
	for _, name := range slices.Sorted(maps.Keys(m)) {
		own := strings.HasSuffix(name, suffix)
		base := strings.TrimSuffix(name, suffix)
		if !own && strings.Contains(name, ".") {
			continue // another tenant's container
		}
		records := m[name]
		keys := slices.SortedFunc(maps.Keys(records), func(a, b entryKey) int { return strings.Compare(a.key, b.key) })
		for _, k := range keys {
			if !own && k.tenant != tenant {
				continue
			}
			r, ok := rec(records[k])
			if !ok {
				continue
			}
			r.Route, r.Family, r.Kind, r.Key = base, family, kind, k.key
			if r.Meta == nil {
				r.Meta = map[string]string{}
			}
			r.Meta["scope"] = scopeTagged
			if own {
				r.Meta["scope"] = scopeOwn
				if !k.tenant.IsZero() {
					r.Meta["tag"] = "1"
				}
			}
			if err := out.Emit(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// staged is one record bound to the target tenant, ready to apply.
type staged struct {
	docs      bool
	container string
	key       entryKey
	doc       docEntry
	kv        kvEntry
}

// importArchive stages every record for tenant (the memory backend holds
// the tenant in memory anyway), then, under the store's lock, refuses a
// tenant that holds anything and applies them all: nothing is half
// applied.
func (s *store) importArchive(_ context.Context, tenant tenancy.ID, in migrate.ArchiveIn) error {
	var all []staged
	for r, err := range migrate.RecordsOf(in) {
		if err != nil {
			return err
		}
		st, err := s.stage(r, tenant)
		if err != nil {
			return err
		}
		all = append(all, st)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range memFamilies {
		if n, sample := f.erase(s, "."+tenant.Hex(), tenant, false); n > 0 {
			return migrate.ArchiveTargetNotEmpty(s.module, rules.Name, tenant, f.name+" ("+sample+")")
		}
	}
	for _, st := range all {
		if st.docs {
			put(s.docs, st.container, st.key, st.doc)
		} else {
			put(s.kv, st.container, st.key, st.kv)
		}
	}
	return nil
}

func put[V any](m map[string]map[entryKey]V, name string, k entryKey, v V) {
	if m[name] == nil {
		m[name] = map[entryKey]V{}
	}
	m[name][k] = v
}

// stage binds r to tenant: its container and tag come from the target
// tenant alone, and a route naming a per-tenant container (a dot) is
// refused, so an edited archive cannot write another tenant's records.
func (s *store) stage(r migrate.Record, tenant tenancy.ID) (staged, error) {
	bad := func(detail string) error {
		return migrate.ArchiveMismatch(s.module, rules.Name, r.Route, detail, "import an unaltered archive of this module")
	}
	if err := containerBase(r.Route); err != nil {
		return staged{}, bad(err.Error())
	}
	st := staged{container: r.Route, key: entryKey{tenant: tenant, key: r.Key}}
	switch r.Meta["scope"] {
	case scopeOwn:
		st.container = r.Route + "." + tenant.Hex()
		if r.Meta["tag"] != "1" {
			st.key.tenant = tenancy.ID{}
		}
	case scopeTagged:
	default:
		return staged{}, bad(fmt.Sprintf("record scope %q is neither %q nor %q", r.Meta["scope"], scopeOwn, scopeTagged))
	}
	switch r.Family {
	case "documents":
		v, err := strconv.ParseInt(r.Meta["version"], 10, 64)
		if err != nil || v < 1 || !json.Valid(r.Value) {
			return staged{}, bad("a document needs a JSON value and a version")
		}
		st.docs, st.doc = true, docEntry{version: v, body: slices.Clone([]byte(r.Value))}
	case "keys":
		st.kv = kvEntry{value: slices.Clone(r.Native)}
		if t := r.Meta["expires_ms"]; t != "" {
			ms, err := strconv.ParseInt(t, 10, 64)
			if err != nil || ms <= 0 {
				return staged{}, bad("expires_ms " + t + " is not a positive number")
			}
			// An entry that expired meanwhile is imported expired: no
			// read sees it.
			st.kv.expires = time.UnixMilli(ms)
		}
	default:
		return staged{}, bad("family " + r.Family + " is not one the memory backend exports")
	}
	return st, nil
}

// containerBase refuses a name that is not a container's base name.
func containerBase(name string) error {
	for _, c := range name {
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("container %q is not a container's base name (it holds %q)", name, c)
		}
	}
	if name == "" {
		return fmt.Errorf("no container")
	}
	return nil
}
