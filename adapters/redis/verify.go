package redis

import (
	"context"
	"fmt"
	"sync"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// undeclaredFamily names the keys of the tenant no family of keyFamilies
// claims: a writer nobody declared, whose keys no teardown removes.
const undeclaredFamily = "undeclared"

// Verify proves an offboarding: it walks the same patterns Offboard
// unlinks (walk, over keyFamilies) and counts the tenant's keys still
// there, on every master; then one SCAN for any framework key holding the
// tenant's id that no declared family claims (a writer of a new family
// not added to keyFamilies), which Offboard could not have removed.
func (o *offboarder) Verify(ctx context.Context, tenant tenancy.ID) (migrate.Erasure, error) {
	var (
		mu     sync.Mutex // ForEachMaster runs the masters at once
		count  = map[string]int64{}
		sample = map[string]string{}
	)
	found := func(family, key string) {
		mu.Lock()
		defer mu.Unlock()
		count[family]++
		if sample[family] == "" {
			sample[family] = key
		}
	}
	err := o.walk(ctx, tenant, func(ctx context.Context, n node, f keyFamily, pattern string, keep func(string) bool) error {
		return scanMatching(ctx, n, pattern, func(k string) {
			if keep(k) {
				found(f.name, k)
			}
		})
	})
	if err != nil {
		return migrate.Erasure{}, err
	}
	hex := tenant.Hex()
	anyKey := keyPrefix + "*" + hex + "*"
	err = o.walkClient(ctx, tenant, func(ctx context.Context, n node) error {
		return scanMatching(ctx, n, anyKey, func(k string) {
			if _, _, ok := familyOf(k); !ok {
				found(undeclaredFamily, k)
			}
		})
	})
	if err != nil {
		return migrate.Erasure{}, err
	}
	var e migrate.Erasure
	for _, f := range keyFamilies {
		e.Check(migrate.Family{Name: f.name, Kind: migrate.KindKeys, Where: f.match(keyPrefix + "<marker>:[<ns>:]" + hex + ":*")},
			count[f.name], sample[f.name])
	}
	e.Check(migrate.Family{Name: undeclaredFamily, Kind: migrate.KindKeys, Where: anyKey}, count[undeclaredFamily], sample[undeclaredFamily])
	return e, nil
}

// walkClient runs fn on every master of the tenant's database.
func (o *offboarder) walkClient(ctx context.Context, tenant tenancy.ID, fn func(context.Context, node) error) error {
	c, done := o.core.client, nop
	if o.core.routes != nil {
		var err error
		if c, done, err = o.core.routes.client(ctx, tenant); err != nil {
			return routing.AtRoute(err, "")
		}
	}
	defer done()
	return eachMaster(ctx, c, fn)
}

// scanMatching calls found for every key matching pattern.
func scanMatching(ctx context.Context, n node, pattern string, found func(string)) error {
	var cursor uint64
	for {
		keys, next, err := n.Scan(ctx, cursor, pattern, scanCount).Result()
		if err != nil {
			return fmt.Errorf("redis: verifying offboarding: SCAN %s: %w", pattern, err)
		}
		for _, k := range keys {
			found(k)
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}
