package redis_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestMoveCostRedis (make bench): a tenant of TENANTWIRE_MOVE_RECORDS keys
// (100,000 by default) moved tagged → namespace → dedicated → tagged, each
// old copy cleaned up; it prints each move's time, its write fence (the
// whole copy and its check) and the cleanup's.
func TestMoveCostRedis(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	n := 100_000
	if v := os.Getenv("TENANTWIRE_MOVE_RECORDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("TENANTWIRE_MOVE_RECORDS=%q: want a positive count", v)
		}
	}
	r := placedRedisApp(t, testsvc.RedisAddr(t))
	a := tenancytest.FreshTenant(t)
	ctx := context.Background()
	if _, err := r.Tenants.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), a) })
	ctxA := tenancy.WithTenant(ctx, a)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < n; i += 16 {
				if err := r.Cache.Set(ctxA, fmt.Sprint("k", i), []byte("a value of some thirty bytes.."), time.Hour); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var moved time.Time
	tenancytest.CheckMoveAround(t, tenancytest.MoveAround{Tenants: r.Tenants, Tenant: a, Module: "cache",
		Before: func(tenancy.Tier) { moved = time.Now() },
		After: func(from, to tenancy.Tier, rep modules.MoveReport) {
			fmt.Printf("move redis %s→%s %d records: move %v, fence %v\n", from, to, rep.Records,
				time.Since(moved).Round(time.Millisecond), rep.Fenced.Round(time.Millisecond))
			if rep.Records != int64(n) {
				t.Fatalf("the move copied %d records, want %d", rep.Records, n)
			}
		},
		Cleaned: func(from, _ tenancy.Tier, took time.Duration) {
			fmt.Printf("cleanup redis %s: %v\n", from, took.Round(time.Millisecond))
		}})
}
