package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestConcurrentLoad loads the document store: 32 goroutines,
// 50 tenants, mixed operations, every value carrying its writer's tenant.
// No read may observe another tenant's value and no acknowledged write may
// be lost.
func TestConcurrentLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	for _, tier := range []tenancy.Tier{tenancy.Tagged, tenancy.Namespace} {
		t.Run(tier.String(), func(t *testing.T) { load(t, tier, 60) })
	}
}

// TestSoakPostgresLoad is TestConcurrentLoad for longer (make soak): each goroutine runs
// TENANTWIRE_SOAK_OPS operations (default 3000) per tier.
func TestSoakPostgresLoad(t *testing.T) {
	if os.Getenv("TENANTWIRE_SOAK") != "1" {
		t.Skip("soak: run with `make soak` (TENANTWIRE_SOAK=1)")
	}
	ops, err := strconv.Atoi(os.Getenv("TENANTWIRE_SOAK_OPS"))
	if err != nil || ops <= 0 {
		ops = 3000
	}
	for _, tier := range []tenancy.Tier{tenancy.Tagged, tenancy.Namespace} {
		t.Run(tier.String(), func(t *testing.T) { load(t, tier, ops) })
	}
}

type owned struct {
	Tenant string `json:"tenant"`
	Seq    int    `json:"seq"`
}

func load(t *testing.T, tier tenancy.Tier, ops int) {
	run := unique()
	dc := postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("load_" + run), Write: naming.Shared("load_" + run)}
	if tier == tenancy.Namespace {
		dc = postgres.DocumentConfig{Read: naming.PerTenant("load"), Write: naming.PerTenant("load")}
	}
	var d *postgres.Documents[owned]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)+"&pool_max_conns=8"), postgres.SchemaPrefix("tw"+run+"_"),
		modules.AllowTeardown(), modules.RequiredIsolation(tier), postgres.Document[owned]("load", dc)), &d)
	tenants := make([]tenancy.ID, 50)
	for i := range tenants {
		tenants[i] = tenancy.MustParseID(fmt.Sprintf("10000000-0000-4000-8000-%012x", i+1))
		provision(t, c, tenants[i])
	}
	if tier == tenancy.Namespace {
		t.Cleanup(func() { teardown(t, c, tenants...) })
	}
	// acked[tenant][id] is the last acknowledged sequence.
	var mu sync.Mutex
	acked := map[tenancy.ID]map[string]int{}
	for _, tn := range tenants {
		acked[tn] = map[string]int{}
	}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range ops {
				tn := tenants[rng.IntN(len(tenants))]
				ctx := tenancy.WithTenant(context.Background(), tn)
				id := fmt.Sprintf("g%d-%d", g, i%10)
				v := owned{Tenant: tn.String(), Seq: i}
				switch rng.IntN(4) {
				case 0, 1:
					if _, err := d.Create(ctx, id, v); err == nil {
						mu.Lock()
						acked[tn][id] = i
						mu.Unlock()
					} else if !errors.Is(err, document.ErrExists) {
						t.Error(err)
					}
				case 2:
					r, err := d.Get(ctx, id)
					if err == nil && r.Value.Tenant != tn.String() {
						t.Errorf("tenant %s read %s's value", tn, r.Value.Tenant)
					}
				case 3:
					recs, err := d.List(ctx, document.Query{Limit: 20})
					if err != nil {
						t.Error(err)
					}
					for _, r := range recs {
						if r.Value.Tenant != tn.String() {
							t.Errorf("tenant %s listed %s's value", tn, r.Value.Tenant)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	for tn, ids := range acked {
		ctx := tenancy.WithTenant(context.Background(), tn)
		for id, seq := range ids {
			r, err := d.Get(ctx, id)
			if err != nil || r.Value.Tenant != tn.String() || r.Value.Seq != seq {
				t.Errorf("acknowledged write %s/%s lost: %+v %v", tn, id, r, err)
			}
		}
	}
}

// TestStopLeavesNoGoroutine: after the app stops, the pools
// (plain and routed) have closed and nothing is left running.
func TestStopLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("app", func(t *testing.T) {
		rs := tierRoutes(t, tenancy.Dedicated)
		ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
		if _, err := rs.counter.Add(ctx, "x", 1); err != nil {
			t.Fatal(err)
		}
	})
}
