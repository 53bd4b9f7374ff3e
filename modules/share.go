package modules

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
)

const shareGroup = `group:"tenantwire_tenant_shares"`

// Share bounds one tenant's part of a module's shared capacity: at most
// Calls of the tenant's calls in flight in the module at once (a pool's
// connections, for a module whose calls each hold one). A call over its
// share waits up to Wait for one of the tenant's own calls to end, then
// fails with tenant_share_exceeded, which is retryable. Other tenants'
// calls never wait for it.
type Share struct {
	Calls int
	Wait  time.Duration
}

// shareDecl is one TenantShare option: the module it bounds.
type shareDecl struct {
	module string
	share  Share
}

// TenantShare bounds each tenant's calls in flight in module (see Share),
// checked in every route's call entry. It needs Lifecycle (or
// LifecycleWith) in the app. fx.New refuses, with tenant_share_invalid, a
// share of a module the app does not have, Calls below 1, a negative
// Wait, two shares for one module, and, for a module whose most
// connections are known, a share that leaves none for the other tenants.
func TenantShare(module string, s Share) fx.Option {
	d := &shareDecl{module: module, share: s}
	return fx.Options(
		fx.Provide(fx.Annotate(func() *shareDecl { return d }, fx.ResultTags(shareGroup))),
		fx.Invoke(func(l Live, in struct {
			fx.In
			Suspensions *Suspensions `optional:"true"`
			Shares      []*shareDecl `group:"tenantwire_tenant_shares"`
		}) error {
			return d.check(l, in.Suspensions, in.Shares)
		}),
	)
}

func (d *shareDecl) check(l Live, s *Suspensions, all []*shareDecl) error {
	bad := func(detail, fix string) error {
		return &tenancy.Error{Code: tenancy.CodeTenantShareInvalid, Module: d.module,
			Detail: fmt.Sprintf("modules.TenantShare(%q, {Calls: %d, Wait: %v}): %s", d.module, d.share.Calls, d.share.Wait, detail), Fix: fix}
	}
	if s == nil {
		return bad("the app has no tenant lifecycle, so no call entry would count the tenant's calls",
			"add modules.Lifecycle() (or LifecycleWith) to the app")
	}
	if d.share.Calls < 1 {
		return bad("a share of fewer than one call admits nothing", "give Calls at least 1")
	}
	if d.share.Wait < 0 {
		return bad("a negative wait", "give Wait zero (fail at once) or a positive bound")
	}
	for _, o := range all {
		if o != d && o.module == d.module {
			return bad("a second share of the same module", "give each module one TenantShare")
		}
	}
	found := false
	for _, w := range l.Wirings {
		// A module with placements is one module per placement: a share
		// of it bounds the tenant's calls at whichever it is placed.
		if w.Module.Name != d.module && (w.Module.Placement == tenancy.None || w.Module.Name != PlacedModuleName(d.module, w.Module.Placement)) {
			continue
		}
		found = true
		if n := w.Module.WorstCaseConns; n > 0 && d.share.Calls >= n {
			return bad(fmt.Sprintf("module %s opens at most %d connections, so one tenant's share of %d leaves none for the others", w.Module.Name, n, n),
				fmt.Sprintf("give Calls below %d, or give the module a larger pool", n))
		}
	}
	if !found {
		return bad("the app has no module of that name", "name one of the app's modules")
	}
	return nil
}

// shares is the app's TenantShare bounds by module, built with its
// Suspensions, before any route's gate: a gate takes its module's once.
type shares map[string]*tenantShare

func sharesOf(decls []*shareDecl, flight *inFlight) shares {
	if len(decls) == 0 {
		return nil
	}
	m := shares{}
	for _, d := range decls {
		if d.share.Calls >= 1 && m[d.module] == nil {
			m[d.module] = &tenantShare{module: d.module, Share: d.share, flight: flight}
		}
	}
	return m
}

// shareOf is the bound of module's calls, nil when it has none; the
// module of one placement of a module with placements takes the placed
// module's.
func (t *Suspensions) shareOf(module string) *tenantShare {
	if t == nil || t.shares == nil {
		return nil
	}
	if s := t.shares[module]; s != nil {
		return s
	}
	if i := strings.LastIndexByte(module, '.'); i > 0 {
		if at, err := tenancy.ParseTier(module[i+1:]); err == nil && at != tenancy.None {
			return t.shares[module[:i]]
		}
	}
	return nil
}

// shareStripes spreads the tenants' counts over locks, by tenant: the
// stripes of the calls in flight, so every tenant of a share's stripe
// ends its calls on the same flight stripe, and a count keeps the one
// function that ends both.
const shareStripes = flightStripes

// shareSpare is how many ended tenants' counts a stripe keeps for the
// next tenant, so a call's hold allocates nothing once the stripe has
// served a few tenants; it bounds the spares at 64×8 counts in all.
const shareSpare = 8

// tenantShare counts one module's calls in flight per tenant. A tenant
// has an entry only while it has calls in flight (or waiting), so the
// state is bounded by the calls in flight, not by the tenants.
type tenantShare struct {
	module string
	Share
	stripes [shareStripes]shareStripe
	// flight is the app's calls in flight, whose end a count's both
	// runs after its own; nil in tests of the share alone.
	flight *inFlight
}

type shareStripe struct {
	mu      sync.Mutex
	tenants map[tenancy.ID]*shareCount
	spare   []*shareCount
	// flightEnds ends a call in flight of the stripe's tenants, by epoch.
	flightEnds *[2]func()
}

type shareCount struct {
	n int
	// freed is closed, and cleared, when one of the tenant's calls ends
	// while another waits.
	freed chan struct{}
	// tenant and end are the count's own, kept with it when it is spared:
	// end, built once, is every hold's end while the count is in use.
	tenant tenancy.ID
	end    func()
	// both[e] is end, then the call's end in flight in epoch e.
	both [2]func()
}

// hold admits one call of tenant within its share, waiting up to Wait for
// one of the tenant's own calls to end; end gives the place back. Without
// contention it allocates nothing (a spared count and its end are reused).
func (s *tenantShare) hold(ctx context.Context, tenant tenancy.ID, backend, route string) (end func(), err error) {
	c, err := s.take(ctx, tenant, backend, route)
	if err != nil {
		return nil, err
	}
	return c.end, nil
}

// take is hold giving the count the call holds.
func (s *tenantShare) take(ctx context.Context, tenant tenancy.ID, backend, route string) (*shareCount, error) {
	i := stripeOf(tenant)
	st := &s.stripes[i]
	var timer *time.Timer
	for {
		st.mu.Lock()
		if st.tenants == nil {
			st.tenants = map[tenancy.ID]*shareCount{}
			if s.flight != nil {
				st.flightEnds = &s.flight.ends[i]
			}
		}
		c := st.tenants[tenant]
		if c == nil {
			c = st.count(tenant)
		}
		if c.n < s.Calls {
			c.n++
			st.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return c, nil
		}
		if c.freed == nil {
			c.freed = make(chan struct{})
		}
		freed := c.freed
		st.mu.Unlock()
		if timer == nil {
			if s.Wait <= 0 {
				return nil, s.exceeded(tenant, backend, route)
			}
			timer = time.NewTimer(s.Wait)
		}
		select {
		case <-freed:
		case <-timer.C:
			return nil, s.exceeded(tenant, backend, route)
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
}

// count is a count for tenant entered in the stripe, a spared one when
// there is one; st.mu is held.
func (st *shareStripe) count(tenant tenancy.ID) *shareCount {
	var c *shareCount
	if n := len(st.spare); n > 0 {
		c, st.spare = st.spare[n-1], st.spare[:n-1]
	} else {
		c = &shareCount{}
		c.end = func() { st.release(c) }
		if fe := st.flightEnds; fe != nil {
			c.both = [2]func(){func() { st.release(c); fe[0]() }, func() { st.release(c); fe[1]() }}
		}
	}
	c.tenant = tenant
	st.tenants[tenant] = c
	return c
}

func (st *shareStripe) release(c *shareCount) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if c.n <= 0 {
		// A second end of one hold would give back a place the count,
		// spared and reused, may now keep for another tenant.
		panic("modules: a tenant share's place was given back twice")
	}
	c.n--
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
	if c.n == 0 {
		delete(st.tenants, c.tenant)
		if len(st.spare) < shareSpare {
			st.spare = append(st.spare, c)
		}
	}
}

// entries counts the tenants with an entry, for tests of the state's bound.
func (s *tenantShare) entries() int {
	n := 0
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.Lock()
		n += len(st.tenants)
		st.mu.Unlock()
	}
	return n
}

func (s *tenantShare) exceeded(tenant tenancy.ID, backend, route string) error {
	return &tenancy.Error{Code: tenancy.CodeTenantShareExceeded, Backend: backend, Module: s.module, Route: route,
		Detail: fmt.Sprintf("tenant %s already has %d call(s) in flight in the module, its share (modules.TenantShare), and none ended within %v; nothing was read or written", tenant, s.Calls, s.Wait),
		Fix:    "retry later; if the tenant needs more, raise the module's share or its Wait, or give the tenant its own placement"}
}
