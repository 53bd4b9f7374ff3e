package routing_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestReadStandsForTargetsAndOpen: with Read set, each bind reads the
// credentials once, the claims come from the Reading's targets (a second
// tenant on the same database is refused before anything opens for it),
// a client is opened by the Reading's Open only, and Config's Targets and
// Open are never called.
func TestReadStandsForTargetsAndOpen(t *testing.T) {
	var reads, opens atomic.Int64
	h := newHarnessWith(t, 4, func(c *routing.Config[*client]) {
		open, tg := c.Open, c.Targets
		c.Open = func(context.Context, routing.Credentials) (*client, error) {
			t.Error("Config.Open called with Read set")
			return nil, errors.New("unused")
		}
		c.Targets = func(routing.Credentials) ([]string, error) {
			t.Error("Config.Targets called with Read set")
			return nil, errors.New("unused")
		}
		c.Read = func(cr routing.Credentials) (routing.Reading[*client], error) {
			reads.Add(1)
			targets, err := tg(cr)
			if err != nil {
				return routing.Reading[*client]{}, err
			}
			return routing.Reading[*client]{Targets: targets, Open: func(ctx context.Context) (*client, error) {
				opens.Add(1)
				return open(ctx, cr)
			}}, nil
		}
	})
	a, b := tenant(1), tenant(2)
	h.setDB(a, "one", "s")
	h.setDB(b, "one", "t")
	_, release := h.acquire(t, a)
	release()
	if r, o := reads.Load(), opens.Load(); r != 1 || o != 1 {
		t.Fatalf("first acquire: %d reads, %d opens; want 1 and 1", r, o)
	}
	_, _, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), b))
	if e, ok := errors.AsType[*tenancy.Error](err); !ok || e.Code != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("second tenant on one database: %v", err)
	}
	if r, o := reads.Load(), opens.Load(); r != 2 || o != 1 {
		t.Fatalf("after the refusal: %d reads, %d opens; want 2 and 1", r, o)
	}
	h.setDB(b, "", "t") // unreadable: nothing opens
	if _, _, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), b)); err == nil || opens.Load() != 1 {
		t.Fatalf("unreadable credentials: err %v, %d opens", err, opens.Load())
	}
}
