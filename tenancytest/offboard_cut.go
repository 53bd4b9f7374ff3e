package tenancytest

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// OffboardCut is what CheckOffboardCut checks: an offboard of Target cut
// at each command it sends to the server in turn.
type OffboardCut struct {
	Tenants *modules.Tenants
	Target  tenancy.ID
	// Other is a tenant whose data no offboard of Target may touch.
	Other tenancy.ID
	// Write gives the target its data again (it is provisioned).
	Write func(ctx context.Context) error
	// Cut arms a cut at the k-th command the module sends from now on
	// (the command fails, or ctx, which the offboard then runs under, is
	// cancelled as it is sent) and returns ctx; Cut(0) disarms it.
	Cut func(k int) context.Context
	// Most bounds the rounds: an offboard sending more commands fails
	// the check.
	Most int
}

// CheckOffboardCut offboards the target with a cut at its first command,
// its second, and so on to the 16th, then at doubling counts (an offboard
// that pages through a large keyspace sends one command a page), until
// an offboard completes before its cut. After
// each cut offboard a rerun, uncut, must complete, the target's export
// must then hold nothing (or be refused as tenant_not_provisioned) and the verifier find nothing (the rerun's
// report carries its checks), and Other's export must be what it was.
// Between rounds the target is provisioned and written again. It returns
// how many cuts there were.
func CheckOffboardCut(t testing.TB, c OffboardCut) (cuts int) {
	t.Helper()
	ctx := context.Background()
	other := manifest(t, export(t, c.Tenants, c.Other))
	refill := func() {
		t.Helper()
		if _, err := c.Tenants.Provision(ctx, c.Target); err != nil {
			t.Fatalf("provisioning the target: %v", err)
		}
		if err := c.Write(tenancy.WithTenant(ctx, c.Target)); err != nil {
			t.Fatalf("writing the target's data: %v", err)
		}
	}
	refill()
	for k := 1; ; k = nextCut(k) {
		if k > c.Most {
			t.Fatalf("offboard cut: the offboard still sends a command after %d; raise Most", c.Most)
		}
		cutCtx := c.Cut(k)
		_, err := c.Tenants.Offboard(cutCtx, c.Target)
		c.Cut(0)
		if err == nil {
			return cuts
		}
		cuts++
		rep, err := c.Tenants.Offboard(ctx, c.Target)
		if err != nil {
			t.Fatalf("the rerun of an offboard cut at command %d: %v (%+v)", k, err, rep)
		}
		for _, s := range rep {
			if len(s.Left) > 0 {
				t.Fatalf("after an offboard cut at command %d and its rerun, %s left %+v", k, s.Module, s.Left)
			}
		}
		var erased bytes.Buffer
		switch err := c.Tenants.Export(ctx, c.Target, &erased); {
		case tenancy.CodeOf(err) == tenancy.CodeTenantNotProvisioned:
			// Nothing of the target is left to read (Kafka: its topics are gone).
		case err != nil:
			t.Fatalf("exporting the target after an offboard cut at command %d and its rerun: %v", k, err)
		default:
			for _, s := range manifest(t, erased.Bytes()).Sections {
				if s.Records > 0 {
					t.Fatalf("after an offboard cut at command %d and its rerun the target's export holds %+v", k, s)
				}
			}
		}
		if got := manifest(t, export(t, c.Tenants, c.Other)); !sameSections(got.Sections, other.Sections) {
			t.Fatalf("an offboard cut at command %d changed the other tenant's data:\nbefore %+v\nafter  %+v", k, other.Sections, got.Sections)
		}
		refill()
	}
}

// nextCut is the cut after k: every step to 16, then doubling.
func nextCut(k int) int {
	if k < 16 {
		return k + 1
	}
	return 2 * k
}

// Cutter is the cut of CheckOffboardCut for a driver hook: Cut arms it at
// the k-th step from now and returns the context the offboard runs
// under; a hook calls Step with each command's or transaction's context
// as it starts, and the armed context is cancelled at the k-th (Step
// reports it, for a hook that fails the command itself). Only steps under
// the armed context count: a driver's own background commands (a cluster
// client's slot reloads) run under others.
type Cutter struct {
	mu     sync.Mutex
	at, n  int
	cancel context.CancelFunc
}

type cutKey struct{}

// Cut arms the cut at the k-th step (0: disarmed).
func (c *Cutter) Cut(k int) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
	c.at, c.n, c.cancel = k, 0, nil
	if k == 0 {
		return context.Background()
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), cutKey{}, c))
	c.cancel = cancel
	return ctx
}

// Step counts one step under ctx, and reports whether it is at or past
// the cut.
func (c *Cutter) Step(ctx context.Context) bool {
	if ctx.Value(cutKey{}) != c {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == 0 || c.cancel == nil {
		return false
	}
	if c.n++; c.n >= c.at {
		c.cancel()
		return true
	}
	return false
}
