package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TopConfig turns on the heavy-hitters view: per route, the tenants with
// the most calls in a window of time, kept in a space-saving sketch of
// fixed size whatever the tenant count.
type TopConfig struct {
	// Size is how many tenants each route's sketch keeps; 64 when zero.
	// A tenant with more than calls/Size of a window's calls is always
	// among them.
	Size int
	// Window is how long one window of counts lasts; a minute when zero.
	Window time.Duration
	// Label is how the top tenants appear on the tenantwire.tenant.top.*
	// metrics. TenantOmit (the default) exports no metric: the view is
	// then read with Telemetry.TopTenants or on the operator listener.
	Label TenantPolicy
	// Export is how many of each route's top tenants the metrics carry,
	// at most Size; 10 when zero.
	Export int
}

func (c TopConfig) withDefaults() TopConfig {
	if c.Size == 0 {
		c.Size = 64
	}
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.Export == 0 {
		c.Export = min(10, c.Size)
	}
	return c
}

// TopRoute is one route's heavy hitters: its last complete window and
// the one under way.
type TopRoute struct {
	Backend, Module, Route string
	Previous, Current      TopWindow
}

// TopWindow is a window's calls and its top tenants, most calls first.
type TopWindow struct {
	Start, End time.Time
	// Calls is every call of the route in the window, by any tenant.
	Calls   int64
	Tenants []TopTenant
}

// TopTenant is one tenant's estimate. Calls over-counts by at most
// Over (the count the tenant inherited when it took its place in the
// sketch; zero when it has held its place since the window began), so
// the true count is in [Calls-Over, Calls]. Time and Errors are counted
// since the tenant took its place: they never over-count.
type TopTenant struct {
	Tenant tenancy.ID
	Calls  int64
	Over   int64
	Time   time.Duration
	Errors int64
}

// sketch is one route's space-saving summary: at most size tenants, in a
// min-heap by calls, with an index by tenant.
type sketch struct {
	info   RouteInfo
	size   int
	window time.Duration

	mu      sync.Mutex
	slots   []TopTenant
	index   map[tenancy.ID]int
	calls   int64
	started time.Time
	prev    TopWindow
}

func newSketch(info RouteInfo, c TopConfig) *sketch {
	return &sketch{info: info, size: c.Size, window: c.Window, slots: make([]TopTenant, 0, c.Size), index: make(map[tenancy.ID]int, c.Size)}
}

// observe counts one call of tenant that took d and failed or not.
func (s *sketch) observe(tenant tenancy.ID, d time.Duration, failed bool, now time.Time) {
	if tenant.IsZero() {
		return
	}
	var errs int64
	if failed {
		errs = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started.IsZero() {
		s.started = now
	} else if now.Sub(s.started) >= s.window {
		s.prev = s.snapshot(now)
		s.slots, s.calls, s.started = s.slots[:0], 0, now
		clear(s.index)
	}
	s.calls++
	if i, ok := s.index[tenant]; ok {
		sl := &s.slots[i]
		sl.Calls++
		sl.Time += d
		sl.Errors += errs
		s.down(i)
		return
	}
	if len(s.slots) < s.size {
		s.slots = append(s.slots, TopTenant{Tenant: tenant, Calls: 1, Time: d, Errors: errs})
		s.index[tenant] = len(s.slots) - 1
		s.up(len(s.slots) - 1)
		return
	}
	// The tenant takes the place of the one with the fewest calls, and
	// inherits its count: the space-saving rule that bounds the error.
	least := s.slots[0]
	delete(s.index, least.Tenant)
	s.slots[0] = TopTenant{Tenant: tenant, Calls: least.Calls + 1, Over: least.Calls, Time: d, Errors: errs}
	s.index[tenant] = 0
	s.down(0)
}

func (s *sketch) less(i, j int) bool { return s.slots[i].Calls < s.slots[j].Calls }

func (s *sketch) swap(i, j int) {
	s.slots[i], s.slots[j] = s.slots[j], s.slots[i]
	s.index[s.slots[i].Tenant], s.index[s.slots[j].Tenant] = i, j
}

func (s *sketch) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *sketch) down(i int) {
	for {
		l, small := 2*i+1, i
		if l < len(s.slots) && s.less(l, small) {
			small = l
		}
		if r := l + 1; r < len(s.slots) && s.less(r, small) {
			small = r
		}
		if small == i {
			return
		}
		s.swap(i, small)
		i = small
	}
}

// snapshot is the window under way, most calls first. Called with mu.
func (s *sketch) snapshot(now time.Time) TopWindow {
	w := TopWindow{Start: s.started, End: now, Calls: s.calls, Tenants: append([]TopTenant(nil), s.slots...)}
	sortTop(w.Tenants)
	return w
}

func (s *sketch) read(now time.Time) TopRoute {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.snapshot(now)
	prev := s.prev
	if !s.started.IsZero() && now.Sub(s.started) >= s.window {
		// No call since the window ended: it is complete, and the one
		// under way is empty.
		prev, cur = cur, TopWindow{Start: now, End: now}
	}
	return TopRoute{Backend: s.info.Backend, Module: s.info.Module, Route: s.info.Route, Previous: prev, Current: cur}
}

func sortTop(ts []TopTenant) {
	// Insertion sort: at most Size entries, read rarely.
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && (ts[j].Calls > ts[j-1].Calls || ts[j].Calls == ts[j-1].Calls && ts[j].Tenant.String() < ts[j-1].Tenant.String()); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// TopTenants is every route's heavy hitters, in the order the routes were
// built; nil without Config.Top.
func (t *Telemetry) TopTenants() []TopRoute {
	if t == nil || t.top == nil {
		return nil
	}
	t.top.mu.Lock()
	sk := append([]*sketch(nil), t.top.sketches...)
	t.top.mu.Unlock()
	now := time.Now()
	out := make([]TopRoute, 0, len(sk))
	for _, s := range sk {
		out = append(out, s.read(now))
	}
	return out
}

// tops is the app's sketches, one per route.
type tops struct {
	cfg      TopConfig
	mu       sync.Mutex
	sketches []*sketch
	byRoute  map[[3]string]*sketch
}

// add is the route's sketch: one per backend, module and route, however
// often the route's instruments are built (an adapter may build them again
// for a lifecycle step), so the view neither grows nor splits a route.
func (t *tops) add(info RouteInfo) *sketch {
	key := [3]string{info.Backend, info.Module, info.Route}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.byRoute[key]; ok {
		return s
	}
	if t.byRoute == nil {
		t.byRoute = map[[3]string]*sketch{}
	}
	s := newSketch(info, t.cfg)
	t.byRoute[key] = s
	t.sketches = append(t.sketches, s)
	return s
}

func checkTop(c TopConfig) error {
	bad := func(detail, fix string) error {
		return &tenancy.Error{Code: tenancy.CodeWiringInvalid, Module: "telemetry", Detail: "telemetry.Config.Top: " + detail, Fix: fix}
	}
	switch {
	case c.Size < 0 || c.Window < 0 || c.Export < 0:
		return bad(fmt.Sprintf("Size %d, Window %v and Export %d must not be negative", c.Size, c.Window, c.Export), "give zero for the defaults or positive values")
	case c.Export > c.withDefaults().Size:
		return bad(fmt.Sprintf("Export %d is more than the sketch keeps (Size %d)", c.Export, c.withDefaults().Size), "give Export at most Size")
	case c.Label.mode == hashed && len(c.Label.key) == 0:
		return bad("TenantHash was given an empty key, so anyone could compute a tenant's hash", "pass telemetry.TenantHash a secret key of at least 16 bytes")
	}
	return nil
}

// observeTop exports, with Top.Label, each route's top Export tenants of
// its last complete window: calls, time in calls and errors, labelled by
// the route and the tenant under Label. At most Export tenant values per
// route, whatever the tenant count.
func (t *Telemetry) observeTop() error {
	if t.top == nil || t.top.cfg.Label.mode == omit {
		return nil
	}
	calls, err1 := t.meter.Int64ObservableGauge("tenantwire.tenant.top.calls",
		metric.WithDescription("Calls of one of the route's top tenants in the last complete window (an estimate: see the docs' error bound)."), metric.WithUnit("{call}"))
	secs, err2 := t.meter.Float64ObservableGauge("tenantwire.tenant.top.time",
		metric.WithDescription("Time in calls of one of the route's top tenants in the last complete window."), metric.WithUnit("s"))
	errs, err3 := t.meter.Int64ObservableGauge("tenantwire.tenant.top.errors",
		metric.WithDescription("Failed calls of one of the route's top tenants in the last complete window."), metric.WithUnit("{call}"))
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return fmt.Errorf("telemetry: %w", err)
		}
	}
	export := t.top.cfg.Export
	_, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, r := range t.TopTenants() {
			ts := r.Previous.Tenants
			if len(ts) > export {
				ts = ts[:export]
			}
			for _, tt := range ts {
				v, _ := t.top.cfg.Label.value(tt.Tenant)
				at := metric.WithAttributes(attribute.String(labelBackend, r.Backend), attribute.String(labelModule, r.Module),
					attribute.String(labelRoute, r.Route), attribute.String(labelTenant, v))
				o.ObserveInt64(calls, tt.Calls, at)
				o.ObserveFloat64(secs, tt.Time.Seconds(), at)
				o.ObserveInt64(errs, tt.Errors, at)
			}
		}
		return nil
	}, calls, secs, errs)
	return err
}
