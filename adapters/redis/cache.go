package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/modules"
)

// Cache is a cache route: byte values with an optional TTL.
type Cache struct {
	route
	// placed: the route of a module with Placements, each call served by
	// the route of the tenant's placement.
	placed *modules.PlacedRoute[*Cache]
}

// found is a value and whether it was there, for a call on a placement.
type found[V any] struct {
	v  V
	ok bool
}

// Get returns the value of key and whether it exists.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if c.placed != nil {
		f, err := modules.OnPlacement(c.placed, ctx, false, func(in *Cache) (found[[]byte], error) {
			v, ok, err := in.Get(ctx, key)
			return found[[]byte]{v, ok}, err
		})
		return f.v, f.ok, err
	}
	return c.getBytes(ctx, key)
}

// Set stores value under key; ttl 0 keeps it until deleted.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if c.placed != nil {
		_, err := modules.OnPlacement(c.placed, ctx, true, func(in *Cache) (struct{}, error) { return struct{}{}, in.Set(ctx, key, value, ttl) })
		return err
	}
	ctx, cl, k, done, err := c.target(ctx, key)
	if err != nil {
		return err
	}
	defer done()
	return cl.Set(ctx, k, value, ttl).Err()
}

// Replace overwrites an existing key, keeping its TTL; it reports false
// and writes nothing when the key does not exist.
func (c *Cache) Replace(ctx context.Context, key string, value []byte) (bool, error) {
	if c.placed != nil {
		return modules.OnPlacement(c.placed, ctx, true, func(in *Cache) (bool, error) { return in.Replace(ctx, key, value) })
	}
	ctx, cl, k, done, err := c.target(ctx, key)
	if err != nil {
		return false, err
	}
	defer done()
	err = cl.SetArgs(ctx, k, value, goredis.SetArgs{Mode: "XX", KeepTTL: true}).Err()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes key and reports whether it existed.
func (c *Cache) Delete(ctx context.Context, key string) (bool, error) {
	if c.placed != nil {
		return modules.OnPlacement(c.placed, ctx, true, func(in *Cache) (bool, error) { return in.Delete(ctx, key) })
	}
	return c.del(ctx, key)
}

// TTL returns the time key has left and whether it exists; a key without
// expiry reports a negative duration.
func (c *Cache) TTL(ctx context.Context, key string) (time.Duration, bool, error) {
	if c.placed != nil {
		f, err := modules.OnPlacement(c.placed, ctx, false, func(in *Cache) (found[time.Duration], error) {
			d, ok, err := in.TTL(ctx, key)
			return found[time.Duration]{d, ok}, err
		})
		return f.v, f.ok, err
	}
	ctx, cl, k, done, err := c.target(ctx, key)
	if err != nil {
		return 0, false, err
	}
	defer done()
	d, err := cl.PTTL(ctx, k).Result()
	if err != nil {
		return 0, false, err
	}
	if d == -2 { // go-redis passes PTTL's -2 (no key) and -1 (no expiry) unscaled
		return 0, false, nil
	}
	return d, true, nil
}

// Counter is a counter route: atomic int64 counters.
type Counter struct {
	route
	// placed: see Cache.placed.
	placed *modules.PlacedRoute[*Counter]
}

// Add adds by to key (created at 0) and returns the new value.
func (c *Counter) Add(ctx context.Context, key string, by int64) (int64, error) {
	if c.placed != nil {
		return modules.OnPlacement(c.placed, ctx, true, func(in *Counter) (int64, error) { return in.Add(ctx, key, by) })
	}
	ctx, cl, k, done, err := c.target(ctx, key)
	if err != nil {
		return 0, err
	}
	defer done()
	return cl.IncrBy(ctx, k, by).Result()
}

// Get returns the counter's value, 0 when it does not exist.
func (c *Counter) Get(ctx context.Context, key string) (int64, error) {
	if c.placed != nil {
		return modules.OnPlacement(c.placed, ctx, false, func(in *Counter) (int64, error) { return in.Get(ctx, key) })
	}
	ctx, cl, k, done, err := c.target(ctx, key)
	if err != nil {
		return 0, err
	}
	defer done()
	n, err := cl.Get(ctx, k).Int64()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	return n, err
}

// Delete removes the counter and reports whether it existed.
func (c *Counter) Delete(ctx context.Context, key string) (bool, error) {
	if c.placed != nil {
		return modules.OnPlacement(c.placed, ctx, true, func(in *Counter) (bool, error) { return in.Delete(ctx, key) })
	}
	return c.del(ctx, key)
}

// Idempotency is an idempotency route: the first result stored under a key
// wins until it expires (RouteConfig.TTL, default 24h).
type Idempotency struct {
	route
	ttl time.Duration
}

// Do returns key's stored result when there is one (replayed = true);
// otherwise it runs fn and stores its result unless a result got there
// first (one SET NX GET round trip). Concurrent first calls for one key
// may each run fn: the first result stored wins, and every other call
// returns it, replayed. A failing fn stores nothing.
func (i *Idempotency) Do(ctx context.Context, key string, fn func(ctx context.Context) ([]byte, error)) (result []byte, replayed bool, err error) {
	if prev, ok, err := i.getBytes(ctx, key); err != nil || ok {
		return prev, ok, err
	}
	if result, err = fn(ctx); err != nil {
		return nil, false, err
	}
	ctx, cl, k, done, err := i.target(ctx, key)
	if err != nil {
		return nil, false, err
	}
	defer done()
	ttl := i.ttl
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	prev, err := cl.SetArgs(ctx, k, result, goredis.SetArgs{Mode: "NX", Get: true, TTL: ttl}).Bytes()
	if errors.Is(err, goredis.Nil) {
		return result, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return prev, true, nil
}

// Get returns the result stored under key, if any.
func (i *Idempotency) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return i.getBytes(ctx, key)
}

// Delete removes the record so the key can be used again; deleted is
// false when nothing was stored under key.
func (i *Idempotency) Delete(ctx context.Context, key string) (deleted bool, err error) {
	return i.del(ctx, key)
}

// getBytes reads key's value and whether it exists.
func (r *route) getBytes(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cl, k, done, err := r.target(ctx, key)
	if err != nil {
		return nil, false, err
	}
	defer done()
	v, err := cl.Get(ctx, k).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// del removes key and reports whether it existed.
func (r *route) del(ctx context.Context, key string) (bool, error) {
	ctx, cl, k, done, err := r.target(ctx, key)
	if err != nil {
		return false, err
	}
	defer done()
	n, err := cl.Del(ctx, k).Result()
	return n > 0, err
}
