package memory

import (
	"context"
	"slices"
	"time"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
)

// CacheConfig wires a key/value cache route.
type CacheConfig struct {
	// TenantAware keys every entry by the bound tenant as well (tagged).
	TenantAware bool
	// Keys names the container; PerTenant reaches namespace.
	Keys naming.Name
}

// CacheRoute adds a cache route and provides *Cache to the app, unnamed
// and as name:"<route>".
func CacheRoute(route string, cfg CacheConfig) Option {
	return modules.Own(func(c *config) {
		fr := floors.Route{
			Name: route, Kind: "cache", TenantAware: cfg.TenantAware,
			Relations: []floors.Relation{containerRelation(cfg.Keys, "keys")},
		}
		addRoute(c, fr, containerProblems(cfg.Keys), func(s *store) *Cache {
			return &Cache{s: s, keys: cfg.Keys, r: newRouteConfig(s, fr)}
		})
	})
}

// Cache is a key/value cache route.
type Cache struct {
	s    *store
	keys naming.Name
	r    routeConfig
}

func (c *Cache) key(ctx context.Context, key string) (string, entryKey, func(), error) {
	name, tag, end, err := c.r.scope(ctx, c.keys, "keys")
	return name, entryKey{tenant: tag, key: key}, end, err
}

// Get returns the value and whether it was present and unexpired.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	name, k, end, err := c.key(ctx, key)
	if err != nil {
		return nil, false, err
	}
	defer end()
	c.s.mu.RLock()
	defer c.s.mu.RUnlock()
	e, ok := c.s.kv[name][k]
	if !ok || (!e.expires.IsZero() && !c.s.now().Before(e.expires)) {
		return nil, false, nil
	}
	return slices.Clone(e.value), true, nil
}

// Set stores value; ttl 0 means no expiry.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	name, k, end, err := c.key(ctx, key)
	if err != nil {
		return err
	}
	defer end()
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	m := c.s.kv[name]
	if m == nil {
		m = map[entryKey]kvEntry{}
		c.s.kv[name] = m
	}
	e := kvEntry{value: slices.Clone(value)}
	if ttl > 0 {
		e.expires = c.s.now().Add(ttl)
	}
	m[k] = e
	return nil
}

// Delete removes key and reports whether it was present.
func (c *Cache) Delete(ctx context.Context, key string) (bool, error) {
	name, k, end, err := c.key(ctx, key)
	if err != nil {
		return false, err
	}
	defer end()
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	_, ok := c.s.kv[name][k]
	delete(c.s.kv[name], k)
	return ok, nil
}
