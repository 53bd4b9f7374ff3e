package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// inFlight is a slow destination that records, per tenant, the most of its
// rows it was ever handed at once, and the most rows of any tenants.
type inFlight struct {
	mu             sync.Mutex
	now            map[tenancy.ID]int
	most           map[tenancy.ID]int
	total, mostAll int
	got            map[string]int
}

func (d *inFlight) Deliver(_ context.Context, m outbox.Message) error {
	d.mu.Lock()
	d.now[m.Tenant]++
	d.total++
	d.most[m.Tenant] = max(d.most[m.Tenant], d.now[m.Tenant])
	d.mostAll = max(d.mostAll, d.total)
	d.mu.Unlock()
	time.Sleep(200 * time.Microsecond)
	d.mu.Lock()
	d.now[m.Tenant]--
	d.total--
	d.got[m.EventID]++
	d.mu.Unlock()
	return nil
}

// TestRelayHasOneRowOfATenantInFlight: a relay hands its destination one
// row of a tenant at a time. Sharded, each tenant's pass is its own, so
// tenants' rows go out side by side, but even with the tenant set read
// every millisecond and A dropped and added back at every other read, a
// tenant's new pass starts only once its old one finished; tenant-global,
// the one pass delivers one row at a time.
func TestRelayHasOneRowOfATenantInFlight(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	for _, sharded := range []bool{true, false} {
		t.Run(fmt.Sprintf("sharded=%v", sharded), func(t *testing.T) {
			var msgs []outbox.Message
			for i := range 400 {
				msgs = append(msgs, outbox.Message{Tenant: []tenancy.ID{a, b}[i%2], EventID: fmt.Sprintf("e%03d", i)})
			}
			src := newSource(msgs...)
			dest := &inFlight{now: map[tenancy.ID]int{}, most: map[tenancy.ID]int{}, got: map[string]int{}}
			cfg := outbox.RelayConfig{Name: "inflight", Source: src, Destination: dest, BatchSize: 5, Idle: time.Millisecond}
			if sharded {
				var mu sync.Mutex
				reads := 0
				cfg.Refresh = time.Millisecond
				cfg.Tenants = func(context.Context) ([]tenancy.ID, error) {
					mu.Lock()
					defer mu.Unlock()
					reads++
					if reads%2 == 0 {
						return []tenancy.ID{b}, nil
					}
					return []tenancy.ID{a, b}, nil
				}
			}
			r, err := outbox.NewRelay(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				dest.mu.Lock()
				defer dest.mu.Unlock()
				return len(dest.got) == len(msgs)
			})
			if err := r.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			dest.mu.Lock()
			defer dest.mu.Unlock()
			t.Logf("most rows in flight: A %d, B %d, any tenants %d", dest.most[a], dest.most[b], dest.mostAll)
			for _, id := range []tenancy.ID{a, b} {
				if dest.most[id] != 1 {
					t.Errorf("tenant %s had %d rows in flight at once, want 1", id, dest.most[id])
				}
			}
			if want := map[bool]int{true: 2, false: 1}[sharded]; dest.mostAll != want {
				t.Errorf("%d rows in flight at once across tenants, want %d", dest.mostAll, want)
			}
			for ev, n := range dest.got {
				if n != 1 {
					t.Errorf("%s delivered %d times", ev, n)
				}
			}
		})
	}
}
