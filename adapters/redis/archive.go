package redis

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// An archived key is its route, its family of keyFamilies and its key
// without the route's prefix (marker, namespace, tenant, kind, route):
// Key, or Meta "key_base64" when it is not UTF-8. Native is DUMP's
// payload and Meta "expires_ms" PEXPIRETIME's. An import rebuilds the
// prefix from the target tenant and the app's own route, so no key of
// the archive can land outside the target tenant's keys.

// archiveKey is one key found for an export.
type archiveKey struct{ route, family, key, rest string }

// Export writes every key of tenant that Offboard would remove (the
// same walk over keyFamilies), route by route, DUMPed with their
// expiry. It is not a point-in-time snapshot: keys are read page by
// page, and a key written meanwhile may or may not be in the archive.
// The key names (not their values) of the tenant are held while it runs.
func (o *offboarder) Export(ctx context.Context, tenant tenancy.ID, out migrate.ArchiveOut) error {
	out.Snapshot("none: keys are read page by page (DUMP), not at one point in time")
	for _, spec := range o.routes {
		r := newRoute(o.core, spec)
		if r.marker == "g" || r.marker == "s" {
			out.Skip(r.name, "tenant-global or shared: its keys are no tenant's")
		}
	}
	prefixes, err := o.prefixes(tenant)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var keys []archiveKey
	err = o.walk(ctx, tenant, func(ctx context.Context, n node, f keyFamily, pattern string, keep func(string) bool) error {
		return scanMatching(ctx, n, pattern, func(k string) {
			if !keep(k) {
				return
			}
			rk, _ := f.routeKey(k)
			for name, p := range prefixes {
				if strings.HasPrefix(rk, p) {
					rest := k[len(p):]
					if f.name == "once" {
						rest = k[len(onceKeyPrefix)+len(p):]
					}
					mu.Lock()
					keys = append(keys, archiveKey{route: name, family: f.name, key: k, rest: rest})
					mu.Unlock()
					return
				}
			}
		})
	})
	if err != nil {
		return err
	}
	slices.SortFunc(keys, func(a, b archiveKey) int {
		return strings.Compare(a.route+"\x00"+a.family+"\x00"+a.rest, b.route+"\x00"+b.family+"\x00"+b.rest)
	})
	c, done, err := o.client(ctx, tenant)
	if err != nil {
		return err
	}
	defer done()
	for len(keys) > 0 {
		page := keys[:min(len(keys), scanCount)]
		keys = keys[len(page):]
		pipe := c.Pipeline()
		dumps, expiries := make([]*goredis.StringCmd, len(page)), make([]*goredis.DurationCmd, len(page))
		for i, k := range page {
			dumps[i], expiries[i] = pipe.Dump(ctx, k.key), pipe.PExpireTime(ctx, k.key)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
			return fmt.Errorf("redis: exporting: DUMP: %w", err)
		}
		for i, k := range page {
			v, err := dumps[i].Result()
			if errors.Is(err, goredis.Nil) {
				continue // removed since the scan
			}
			rec := migrate.Record{Route: k.route, Family: k.family, Kind: "key", Native: []byte(v), Meta: map[string]string{}}
			if utf8.ValidString(k.rest) {
				rec.Key = k.rest
			} else {
				rec.Meta["key_base64"] = base64.StdEncoding.EncodeToString([]byte(k.rest))
			}
			if at := expiries[i].Val(); at > 0 {
				rec.Meta["expires_ms"] = strconv.FormatInt(at.Milliseconds(), 10)
			}
			if err := out.Emit(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefixes is each tenant-scoped route's key prefix for tenant.
func (o *offboarder) prefixes(tenant tenancy.ID) (map[string]string, error) {
	out := map[string]string{}
	for _, spec := range o.routes {
		r := newRoute(o.core, spec)
		if r.marker == "g" || r.marker == "s" {
			continue
		}
		ns := ""
		if r.ns != nil {
			var err error
			if ns, err = r.namespace(tenant); err != nil {
				return nil, err
			}
		}
		out[r.name] = buildKey(r.marker, ns, tenant, r.code, r.name, "")
	}
	return out, nil
}

// client is the tenant's database.
func (o *offboarder) client(ctx context.Context, tenant tenancy.ID) (goredis.UniversalClient, func(), error) {
	if o.core.routes == nil {
		return o.core.client, nop, nil
	}
	c, done, err := o.core.routes.client(ctx, tenant)
	if err != nil {
		return nil, nil, routing.AtRoute(err, "")
	}
	return c, done, nil
}

// Import RESTOREs an archive's keys under tenant's prefixes, which must
// hold no key of the tenant (the same walk as Offboard's). Keys are
// restored page by page, not atomically: an interrupted import leaves
// some keys, and is rerun after Tenants.Offboard and Provision of the
// target (docs/archive.md). A key past its expiry is not restored.
func (o *offboarder) Import(ctx context.Context, tenant tenancy.ID, in migrate.ArchiveIn) error {
	held := ""
	var mu sync.Mutex
	err := o.walk(ctx, tenant, func(ctx context.Context, n node, f keyFamily, pattern string, keep func(string) bool) error {
		return scanMatching(ctx, n, pattern, func(k string) {
			if keep(k) {
				mu.Lock()
				held = k
				mu.Unlock()
			}
		})
	})
	if err != nil {
		return err
	}
	if held != "" {
		return migrate.ArchiveTargetNotEmpty(o.core.module, rules.Name, tenant, "key "+held)
	}
	prefixes, err := o.prefixes(tenant)
	if err != nil {
		return err
	}
	for _, sec := range in.Sections() {
		if _, ok := prefixes[sec.Route]; !ok || (sec.Family != "route" && sec.Family != "once") {
			return migrate.ArchiveMismatch(o.core.module, rules.Name, sec.Route, fmt.Sprintf("the archive holds family %q of route %q: the module has no such tenant-scoped route or key family", sec.Family, sec.Route),
				"import an unaltered archive into an app with the archive's routes")
		}
	}
	c, done, err := o.client(ctx, tenant)
	if err != nil {
		return err
	}
	defer done()
	pipe := c.Pipeline()
	flush := func() error {
		if pipe.Len() == 0 {
			return nil
		}
		_, err := pipe.Exec(ctx)
		if err != nil {
			return fmt.Errorf("redis: importing: RESTORE: %w", err)
		}
		return nil
	}
	for r, err := range migrate.RecordsOf(in) {
		if err != nil {
			return err
		}
		key, ttl, err := o.restoreKey(r, prefixes)
		if err != nil {
			return err
		}
		if ttl < 0 {
			continue
		}
		if ttl > 0 {
			pipe.Do(ctx, "RESTORE", key, ttl, string(r.Native), "REPLACE", "ABSTTL")
		} else {
			pipe.Do(ctx, "RESTORE", key, 0, string(r.Native), "REPLACE")
		}
		if pipe.Len() >= scanCount {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// restoreKey is r's key for the target tenant (prefixes) and its expiry
// in Unix milliseconds (0: none, -1: expired).
func (o *offboarder) restoreKey(r migrate.Record, prefixes map[string]string) (string, int64, error) {
	bad := func(detail string) error {
		return migrate.ArchiveMismatch(o.core.module, rules.Name, r.Route, detail, "import an unaltered archive into an app with the archive's routes")
	}
	p, ok := prefixes[r.Route]
	if !ok || r.Kind != "key" || len(r.Native) == 0 {
		return "", 0, bad(fmt.Sprintf("a %s record: the module has no tenant-scoped route %q", r.Kind, r.Route))
	}
	rest := r.Key
	if b := r.Meta["key_base64"]; b != "" {
		raw, err := base64.StdEncoding.DecodeString(b)
		if err != nil {
			return "", 0, bad("key_base64 is not base64")
		}
		rest = string(raw)
	}
	var key string
	switch r.Family {
	case "route":
		key = p + rest
	case "once":
		key = onceKeyPrefix + p + rest
	default:
		return "", 0, bad("family " + r.Family + " is not one of the module's key families")
	}
	if f, rk, ok := familyOf(key); !ok || f != r.Family || !strings.HasPrefix(rk, p) {
		return "", 0, bad("the key does not parse as one of the route's")
	}
	var at int64
	if e := r.Meta["expires_ms"]; e != "" {
		v, err := strconv.ParseInt(e, 10, 64)
		if err != nil || v <= 0 {
			return "", 0, bad("expires_ms " + e + " is not a time")
		}
		if at = v; at <= time.Now().UnixMilli() {
			at = -1
		}
	}
	return key, at, nil
}
