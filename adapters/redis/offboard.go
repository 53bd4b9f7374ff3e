package redis

import (
	"context"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// scanCount is the SCAN page size, and so the most keys one UNLINK
// pipeline carries.
const scanCount = 500

// offboarder deletes a tenant's keys from the module's database.
type offboarder struct {
	core     *core
	routes   []*routeSpec
	teardown bool
	// ownOnly: the module is one placement of a module with placements,
	// whose other placements hold the tenant's keys too (a move's two
	// copies): it removes and counts only its own routes' keys.
	ownOnly bool
}

// Offboard deletes every key of tenant, in every family of keyFamilies
// (the routes' keys and AddOnce's markers): the keys carrying its tenant
// segment (tagged and routed routes, whatever route wrote them) and the
// keys under its namespace of each namespace route (on one placement of
// a module with placements, its own routes' keys only); then it drops the
// tenant's in-process state (stream group memos, namespace caches). On a routed module it
// works in the tenant's own database. Keys are found with SCAN MATCH on
// every master and removed with UNLINK, one pipeline per page; a rerun
// completes an interrupted offboarding. Tenant-global and shared keys
// stay: they are no tenant's.
func (o *offboarder) Offboard(ctx context.Context, tenant tenancy.ID) error {
	if err := migrate.CheckTeardown(o.teardown, tenant); err != nil {
		return err
	}
	defer o.core.forgetters.forget(tenant)
	return o.walk(ctx, tenant, func(ctx context.Context, n node, _ keyFamily, pattern string, keep func(string) bool) error {
		return unlinkMatching(ctx, n, pattern, keep)
	})
}

// visitFn is what walk does with one family's SCAN pattern on one master:
// unlink (Offboard) or count (Verify) the keys keep accepts.
type visitFn func(ctx context.Context, n node, f keyFamily, pattern string, keep func(string) bool) error

// walk visits, on every master of the tenant's database, every family of
// keyFamilies with every pattern the tenant's keys of it can match: the
// list Offboard removes and Verify scans, so both walk one declaration.
func (o *offboarder) walk(ctx context.Context, tenant tenancy.ID, visit visitFn) error {
	hex := tenant.Hex()
	var exact []string
	for _, spec := range o.routes {
		r := newRoute(o.core, spec)
		// Keys under marker n carry only the namespace; the others with a
		// namespace carry the tenant too and are found by it below.
		if r.ns == nil || r.marker != "n" {
			continue
		}
		ns, err := r.namespace(tenant)
		if err != nil {
			return err
		}
		exact = append(exact, buildKey(r.marker, ns, tenant, r.code, r.name, "")+"*")
	}
	own := func(string) bool { return true }
	if o.ownOnly {
		prefixes, err := o.prefixes(tenant)
		if err != nil {
			return err
		}
		own = func(rk string) bool {
			for _, p := range prefixes {
				if strings.HasPrefix(rk, p) {
					return true
				}
			}
			return false
		}
	}
	return o.walkClient(ctx, tenant, func(ctx context.Context, n node) error {
		for _, f := range keyFamilies {
			for _, m := range tenantMarkers {
				pat := keyPrefix + m + ":"
				if markerHasNamespace(m) {
					pat += "*:"
				}
				keep := func(k string) bool { rk, ok := f.routeKey(k); return ok && keyOfTenant(rk, hex) && own(rk) }
				if err := visit(ctx, n, f, f.match(pat+hex+":*"), keep); err != nil {
					return err
				}
			}
			for _, pat := range exact {
				keep := func(k string) bool { rk, ok := f.routeKey(k); return ok && strings.HasPrefix(rk, pat[:len(pat)-1]) }
				if err := visit(ctx, n, f, f.match(pat), keep); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// tenantMarkers are the markers whose keys carry the tenant segment.
var tenantMarkers = []string{"t", "d", "dt", "nt", "dn", "dnt"}

// keyOfTenant reports whether key's tenant segment is hex. A MATCH
// pattern's '*' spans ':', so a key whose user part holds ":<hex>:" would
// match another tenant's pattern; parsing the prefix rules that out.
func keyOfTenant(key, hex string) bool {
	t, ok := tenantOfKey(key)
	return ok && t == hex
}

// tenantOfKey is the tenant segment of a framework key (32 hex digits),
// read from its prefix only, never from the user part.
func tenantOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return "", false
	}
	marker, rest, ok := strings.Cut(rest, ":")
	if !ok || !markerHasTenant(marker) {
		return "", false
	}
	if markerHasNamespace(marker) {
		if _, rest, ok = strings.Cut(rest, ":"); !ok {
			return "", false
		}
	}
	const n = 32
	if len(rest) <= n || rest[n] != ':' {
		return "", false
	}
	return rest[:n], true
}

// namespacePrefix is the part of a key under marker n that names its
// namespace and route ("tw:n:<ns>:<kind>:<route>:"): names hold no ':'.
func namespacePrefix(key string) (string, bool) {
	if !strings.HasPrefix(key, keyPrefix+"n:") {
		return "", false
	}
	end, seps := 0, 0
	for end < len(key) && seps < 5 {
		if key[end] == ':' {
			seps++
		}
		end++
	}
	return key[:end], seps == 5
}

// OffboardMany removes the keys of many tenants at once: one SCAN walk of
// the framework's keys per master serves them all, where Offboard walks
// the keyspace six times per key family (and once per namespace route) for
// each tenant, so offboarding n tenants costs a walk of the database per
// batch instead of 12n. A key is removed when its tenant segment, or its namespace
// route's prefix, is one of the tenants'. A routed module offboards each
// tenant in its own database. The error of a failed walk is every tenant's
// of the batch; a rerun completes it.
func (o *offboarder) OffboardMany(ctx context.Context, tenants []tenancy.ID) []error {
	errs := make([]error, len(tenants))
	if o.core.routes != nil || len(tenants) == 1 || o.ownOnly {
		for i, id := range tenants {
			errs[i] = o.Offboard(ctx, id)
		}
		return errs
	}
	hexes := make(map[string]bool, len(tenants))
	prefixes := map[string]bool{}
	for i, id := range tenants {
		if errs[i] = migrate.CheckTeardown(o.teardown, id); errs[i] != nil {
			continue
		}
		hexes[id.Hex()] = true
		for _, spec := range o.routes {
			r := newRoute(o.core, spec)
			if r.ns == nil || r.marker != "n" {
				continue
			}
			ns, err := r.namespace(id)
			if err != nil {
				errs[i] = err
				delete(hexes, id.Hex())
				break
			}
			prefixes[buildKey(r.marker, ns, id, r.code, r.name, "")] = true
		}
	}
	if len(hexes) == 0 {
		return errs
	}
	defer func() {
		for i, id := range tenants {
			if errs[i] == nil {
				o.core.forgetters.forget(id)
			}
		}
	}()
	mine := func(k string) bool {
		_, k, ok := familyOf(k)
		if !ok {
			return false
		}
		if t, ok := tenantOfKey(k); ok {
			return hexes[t]
		}
		p, ok := namespacePrefix(k)
		return ok && prefixes[p]
	}
	err := eachMaster(ctx, o.core.client, func(ctx context.Context, n node) error {
		return unlinkMatching(ctx, n, keyPrefix+"*", mine)
	})
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}

// node is one server's commands: a master of a cluster, or the client.
type node interface {
	Scan(ctx context.Context, cursor uint64, match string, count int64) *goredis.ScanCmd
	Pipeline() goredis.Pipeliner
}

// eachMaster runs fn on every master: SCAN on a cluster client walks one
// node only.
func eachMaster(ctx context.Context, c goredis.UniversalClient, fn func(context.Context, node) error) error {
	switch cc := c.(type) {
	case *goredis.ClusterClient:
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return fn(ctx, n) })
	case *goredis.Ring:
		return cc.ForEachShard(ctx, func(ctx context.Context, n *goredis.Client) error { return fn(ctx, n) })
	default:
		return fn(ctx, c)
	}
}

// unlinkMatching unlinks the keys matching pattern that keep accepts. Each
// UNLINK names one key, so a page's batch is valid on a cluster node,
// whose keys span many slots.
func unlinkMatching(ctx context.Context, n node, pattern string, keep func(string) bool) error {
	var cursor uint64
	for {
		keys, next, err := n.Scan(ctx, cursor, pattern, scanCount).Result()
		if err != nil {
			return fmt.Errorf("redis: offboarding: SCAN %s: %w", pattern, err)
		}
		pipe := n.Pipeline()
		for _, k := range keys {
			if keep(k) {
				pipe.Unlink(ctx, k)
			}
		}
		if pipe.Len() > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("redis: offboarding: UNLINK: %w", err)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}
