package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestMoveCostRedis (make bench): a tenant of TENANTWIRE_MOVE_RECORDS keys
// (100,000 by default) moved tagged → namespace → dedicated → tagged, each
// old copy cleaned up; it prints each move's time, its write fence (the
// whole copy and its check) and the cleanup's.
func TestMoveCostRedis(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	r := placedRedisApp(t, testsvc.RedisAddr(t))
	a := tenancytest.FreshTenant(t)
	if _, err := r.Tenants.Provision(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), a) })
	tenancytest.CheckMoveCost(t, tenancytest.MoveCost{MoveAround: tenancytest.MoveAround{Tenants: r.Tenants, Tenant: a, Module: "cache"},
		Backend: "redis", Records: tenancytest.MoveRecords(t, 100_000), Writers: 16,
		Write: func(ctx context.Context, i int) error {
			return r.Cache.Set(ctx, fmt.Sprint("k", i), []byte("a value of some thirty bytes.."), time.Hour)
		}})
}
