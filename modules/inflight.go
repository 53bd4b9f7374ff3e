package modules

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// flightStripes is how many counters calls are spread over, by tenant.
// A drain waits for its tenants' stripes only, so a long call of an
// unrelated tenant delays an offboard only when the two share a stripe.
const flightStripes = 128

// flightCount is one stripe's calls in flight, one count per epoch, alone
// on its cache line.
type flightCount struct {
	n [2]atomic.Int64
	_ [48]byte
}

// inFlight counts every module's calls in flight, by stripe of tenant and
// epoch. A drain flips the epoch and waits for the old one's counts of
// its stripes to reach zero: every call that entered before is then done,
// while calls entering after count in the new epoch and do not hold it
// up. The state is fixed (no entry per tenant), and entering allocates
// nothing: the functions that end a call are built once.
type inFlight struct {
	init   sync.Once
	epoch  atomic.Uint32
	counts [flightStripes]flightCount
	ends   [flightStripes][2]func()
	// drain serialises drains, so each flip finds the epoch it reuses
	// empty on the stripes it waits for.
	drain sync.Mutex
}

func nop() {}

func stripeOf(id tenancy.ID) int {
	b := id.Bytes()
	return int(b[15]^b[7]^b[3]) % flightStripes
}

func (f *inFlight) setup() {
	f.init.Do(func() {
		for i := range f.ends {
			for e := range f.ends[i] {
				n := &f.counts[i].n[e]
				f.ends[i][e] = func() { n.Add(-1) }
			}
		}
	})
}

// Enter registers one call of tenant to backend's module and route as in
// flight, then checks the tenant's suspension: with Go's sequentially
// consistent atomics either a drain (Offboard) sees the call, or the call
// sees the suspension. On nil the caller runs the call and then runs end,
// exactly once, when nothing more of the call can be written: after its
// commit, its last statement, its delivery. On an error (tenant_suspended)
// the call is already out and end is nil. A nil *Suspensions suspends
// nobody and counts nothing; its end does nothing.
func (t *Suspensions) Enter(tenant tenancy.ID, backend, module, route string) (end func(), err error) {
	if t == nil {
		return nop, nil
	}
	i, e, err := t.enterAt(tenant, backend, module, route)
	if err != nil {
		return nil, err
	}
	return t.flight.ends[i][e], nil
}

// enterAt is Enter giving the stripe and epoch the call counts in, whose
// end is t.flight.ends[i][e]; t is not nil.
func (t *Suspensions) enterAt(tenant tenancy.ID, backend, module, route string) (i int, e uint32, err error) {
	f := &t.flight
	f.setup()
	i, e = stripeOf(tenant), f.epoch.Load()&1
	f.counts[i].n[e].Add(1)
	if err := t.Check(tenant, backend, module, route); err != nil {
		f.counts[i].n[e].Add(-1)
		return 0, 0, err
	}
	return i, e, nil
}

// Both is end functions a and b as one, a first: a route that enters a
// call (Enter) and also holds a pool or routed client ends both.
func Both(a, b func()) func() { return func() { a(); b() } }

// drainPoll is how often a drain rereads the counts.
const drainPoll = 2 * time.Millisecond

// Drain waits until every call of tenants that entered (Enter) before it
// began has ended, and every worker of theirs (Serve) has stopped, or ctx
// is done: then it returns tenant_drain_timeout naming how many still run.
// Suspend the tenants first, or calls keep coming.
func (t *Suspensions) Drain(ctx context.Context, tenants ...tenancy.ID) error {
	if t == nil || len(tenants) == 0 {
		return nil
	}
	if err := t.drainCalls(ctx, tenants); err != nil {
		return err
	}
	if n, err := t.serving.wait(ctx, tenants); err != nil {
		return drainTimeout(tenants, int64(n), err)
	}
	return nil
}

// drainMove is Drain for a move of tenant in module: the tenant's calls,
// and the workers of the module's placements only.
func (t *Suspensions) drainMove(ctx context.Context, tenant tenancy.ID, module string) error {
	tenants := []tenancy.ID{tenant}
	if err := t.drainCalls(ctx, tenants); err != nil {
		return err
	}
	if n, err := t.serving.waitIn(ctx, tenant, module); err != nil {
		return drainTimeout(tenants, int64(n), err)
	}
	return nil
}

// drainCalls waits for the calls of tenants that entered before it began.
func (t *Suspensions) drainCalls(ctx context.Context, tenants []tenancy.ID) error {
	f := &t.flight
	f.setup()
	var stripes [flightStripes]bool
	for _, id := range tenants {
		stripes[stripeOf(id)] = true
	}
	f.drain.Lock()
	defer f.drain.Unlock()
	old := f.epoch.Load() & 1
	// The epoch new calls are about to count in may still hold calls
	// from before the previous drain, on stripes that drain did not wait
	// for: wait for them before reusing it, then flip and wait for the
	// current one.
	if err := f.wait(ctx, &stripes, 1-old, tenants); err != nil {
		return err
	}
	f.epoch.Add(1)
	return f.wait(ctx, &stripes, old, tenants)
}

func (f *inFlight) wait(ctx context.Context, stripes *[flightStripes]bool, epoch uint32, tenants []tenancy.ID) error {
	var tick *time.Ticker
	for {
		var busy int64
		for i, on := range stripes {
			if on {
				busy += f.counts[i].n[epoch].Load()
			}
		}
		if busy == 0 {
			return nil
		}
		if tick == nil {
			tick = time.NewTicker(drainPoll)
			defer tick.Stop()
		}
		select {
		case <-ctx.Done():
			return drainTimeout(tenants, busy, ctx.Err())
		case <-tick.C:
		}
	}
}

func drainTimeout(tenants []tenancy.ID, busy int64, cause error) error {
	who := fmt.Sprintf("tenant %s", tenants[0])
	if len(tenants) > 1 {
		who = fmt.Sprintf("%d tenants (%s, ...)", len(tenants), tenants[0])
	}
	return &tenancy.Error{
		Code: tenancy.CodeTenantDrainTimeout, Module: "modules", Route: "offboard",
		Detail: fmt.Sprintf("%s: %d call(s) or worker(s) that began before the suspension were still running when the wait ended (%v); the tenant stays suspended and nothing was removed", who, busy, cause),
		Fix:    "give Offboard a longer deadline (the tenant's calls in flight, a unit of work or an idempotent call, and its readers must end first), or end the long call, and run Offboard again",
	}
}
