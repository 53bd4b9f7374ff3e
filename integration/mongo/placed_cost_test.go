package mongo_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestMoveCostMongo (make bench): a tenant of TENANTWIRE_MOVE_RECORDS
// documents (10,000 by default: FerretDB's SQLite backend writes about a
// thousand a second here) moved tagged → namespace → dedicated → tagged,
// each old copy cleaned up; it prints each move's time, its write fence
// and the cleanup's.
func TestMoveCostMongo(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	n := 10_000
	if v := os.Getenv("TENANTWIRE_MOVE_RECORDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("TENANTWIRE_MOVE_RECORDS=%q: want a positive count", v)
		}
	}
	r, _, _ := placedMongoApp(t)
	a := tenancytest.TenantA
	ctx := context.Background()
	ctxA := tenancy.WithTenant(ctx, a)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if _, err := r.Orders.Create(ctxA, fmt.Sprint("o-", i), order{Total: i}); err != nil {
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
	tenancytest.CheckMoveAround(t, tenancytest.MoveAround{Tenants: r.Tenants, Tenant: a, Module: "orders",
		Before: func(tenancy.Tier) { moved = time.Now() },
		After: func(from, to tenancy.Tier, rep modules.MoveReport) {
			fmt.Printf("move mongo %s→%s %d records: move %v, fence %v\n", from, to, rep.Records,
				time.Since(moved).Round(time.Millisecond), rep.Fenced.Round(time.Millisecond))
			if rep.Records != int64(n) {
				t.Fatalf("the move copied %d records, want %d", rep.Records, n)
			}
		},
		Cleaned: func(from, _ tenancy.Tier, took time.Duration) {
			fmt.Printf("cleanup mongo %s: %v\n", from, took.Round(time.Millisecond))
		}})
}
