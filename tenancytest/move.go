package tenancytest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// MoveAround is what CheckMoveAround runs: Tenant moved in Module (one
// with all three placements, the tenant at tagged) through every
// placement and back.
type MoveAround struct {
	Tenants *modules.Tenants
	Tenant  tenancy.ID
	Module  string
	// Before, when set, runs before each move, After after it (with the
	// move's report) and before the old copy is cleaned up, Cleaned after
	// the cleanup (with the time it took).
	Before  func(to tenancy.Tier)
	After   func(from, to tenancy.Tier, rep modules.MoveReport)
	Cleaned func(from, to tenancy.Tier, took time.Duration)
}

// CheckMoveAround moves the tenant tagged → namespace → dedicated →
// tagged, each move within 30 s, and after each removes the old copy with
// CleanupMove, whose verifier must find nothing of the tenant left there.
func CheckMoveAround(t testing.TB, m MoveAround) {
	t.Helper()
	ctx := context.Background()
	from := tenancy.Tagged
	for _, to := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated, tenancy.Tagged} {
		if m.Before != nil {
			m.Before(to)
		}
		mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		rep, err := m.Tenants.Move(mctx, m.Tenant, m.Module, to, modules.MoveOptions{})
		cancel()
		if err != nil {
			t.Fatalf("move %s → %s: %v", from, to, err)
		}
		if m.After != nil {
			m.After(from, to, rep)
		}
		began := time.Now()
		if _, err := m.Tenants.CleanupMove(ctx, m.Tenant, m.Module, from); err != nil {
			t.Fatalf("cleaning up %s after the move to %s: %v", from, to, err)
		}
		if m.Cleaned != nil {
			m.Cleaned(from, to, time.Since(began))
		}
		from = to
	}
}

// Deliveries is an outbox destination that records what it delivered,
// per tenant and event (DeliveryKey), refuses every delivery while Down
// is set, and fails a delivery bound to another tenant than its row's.
type Deliveries struct {
	Down atomic.Bool
	mu   sync.Mutex
	got  map[string]int
}

// DeliveryKey names tenant's event in Deliveries.
func DeliveryKey(tenant tenancy.ID, event string) string { return tenant.Hex() + "/" + event }

func (d *Deliveries) Deliver(ctx context.Context, m outbox.Message) error {
	if d.Down.Load() {
		return errors.New("destination down")
	}
	if id, _ := tenancy.FromContext(ctx); id != m.Tenant {
		return fmt.Errorf("delivered %s's event %s under %s", m.Tenant, m.EventID, id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.got == nil {
		d.got = map[string]int{}
	}
	d.got[DeliveryKey(m.Tenant, m.EventID)]++
	return nil
}

// Await waits up to 20 s until every event of want is delivered, then
// returns the events delivered more than once.
func (d *Deliveries) Await(t testing.TB, want []string) (twice []string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d.mu.Lock()
		var missing []string
		for _, k := range want {
			if d.got[k] == 0 {
				missing = append(missing, k)
			}
		}
		twice = twice[:0]
		for k, n := range d.got {
			if n > 1 {
				twice = append(twice, k)
			}
		}
		d.mu.Unlock()
		if len(missing) == 0 {
			return twice
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events never delivered, e.g. %s", len(missing), len(want), missing[0])
		}
	}
}

// RelayMove is what CheckRelayFollowsMove checks: a module with
// placements whose relay (sharded over A and B, delivering to Sink) drains
// each placement's outbox.
type RelayMove struct {
	Tenants *modules.Tenants
	Module  string
	// A is moved; B, at another placement, stays.
	A, B tenancy.ID
	Sink *Deliveries
	// Write writes one event of id event to the placed outbox, under the
	// tenant ctx binds.
	Write func(ctx context.Context, event string) error
	// Before and After, when set, run with the move's (see MoveAround).
	Before func(to tenancy.Tier)
	After  func(from, to tenancy.Tier)
}

// CheckRelayFollowsMove moves A around the placements (CheckMoveAround)
// with events of A and B waiting undelivered at each move, the
// destination down: once it is back, every event, and every event written
// after the move, is delivered exactly once, from A's placement. The old
// copy's rows, still undelivered there until the cleanup, must never be
// relayed; on one replica nothing is delivered twice.
func CheckRelayFollowsMove(t testing.TB, r RelayMove) {
	t.Helper()
	ctx := context.Background()
	var want []string
	write := func(id tenancy.ID, tag string) {
		t.Helper()
		for i := range 3 {
			ev := fmt.Sprintf("%s-%d", tag, i)
			if err := r.Write(tenancy.WithTenant(ctx, id), ev); err != nil {
				t.Fatalf("writing %s for %s: %v", ev, id, err)
			}
			want = append(want, DeliveryKey(id, ev))
		}
	}
	CheckMoveAround(t, MoveAround{Tenants: r.Tenants, Tenant: r.A, Module: r.Module,
		Before: func(to tenancy.Tier) {
			write(r.A, "a-"+to.String()+"-live")
			r.Sink.Await(t, want)
			r.Sink.Down.Store(true)
			write(r.A, "a-"+to.String()+"-waiting")
			write(r.B, "b-"+to.String())
			if r.Before != nil {
				r.Before(to)
			}
		},
		After: func(from, to tenancy.Tier, rep modules.MoveReport) {
			t.Logf("moved %s → %s: %d records, writes fenced %v", from, to, rep.Records, rep.Fenced)
			r.Sink.Down.Store(false)
			write(r.A, "a-"+to.String()+"-after")
			r.Sink.Await(t, want)
			time.Sleep(200 * time.Millisecond) // passes of a relay that should not serve A
			if twice := r.Sink.Await(t, want); len(twice) > 0 {
				t.Fatalf("after the move to %s, %d events were delivered twice, e.g. %s", to, len(twice), twice[0])
			}
			if r.After != nil {
				r.After(from, to)
			}
		}})
}

// MoveRecords is how many records a move test gives its tenant:
// TENANTWIRE_MOVE_RECORDS when set (make soak, make bench), else def.
func MoveRecords(t testing.TB, def int) int {
	t.Helper()
	v := os.Getenv("TENANTWIRE_MOVE_RECORDS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("TENANTWIRE_MOVE_RECORDS=%q: want a positive count", v)
	}
	return n
}

// MoveCost is what CheckMoveCost measures: m.Tenant given Records records
// by Write (record i, under the tenant's context), from Writers goroutines
// at once, then moved around the placements.
type MoveCost struct {
	MoveAround
	// Backend names the lines printed.
	Backend          string
	Records, Writers int
	Write            func(ctx context.Context, i int) error
}

// CheckMoveCost seeds the tenant, moves it around (CheckMoveAround), and
// prints each move's time, its write fence and its cleanup's time; every
// move must copy exactly the records written.
func CheckMoveCost(t testing.TB, c MoveCost) {
	t.Helper()
	ctx := tenancy.WithTenant(context.Background(), c.Tenant)
	var wg sync.WaitGroup
	errs := make(chan error, c.Writers)
	for g := range c.Writers {
		wg.Go(func() {
			for i := g; i < c.Records; i += c.Writers {
				if err := c.Write(ctx, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("seeding the tenant: %v", err)
	}
	var moved time.Time
	m := c.MoveAround
	m.Before = func(tenancy.Tier) { moved = time.Now() }
	m.After = func(from, to tenancy.Tier, rep modules.MoveReport) {
		fmt.Printf("move %s %s→%s %d records: move %v, fence %v\n", c.Backend, from, to, rep.Records,
			time.Since(moved).Round(time.Millisecond), rep.Fenced.Round(time.Millisecond))
		if rep.Records != int64(c.Records) {
			t.Fatalf("the move copied %d records, want %d", rep.Records, c.Records)
		}
	}
	m.Cleaned = func(from, _ tenancy.Tier, took time.Duration) {
		fmt.Printf("cleanup %s %s: %v\n", c.Backend, from, took.Round(time.Millisecond))
	}
	CheckMoveAround(t, m)
}
