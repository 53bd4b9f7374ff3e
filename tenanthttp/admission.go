package tenanthttp

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Limits are one tenant's admission limits at a boundary. The zero value
// admits every request and keeps no state for the tenant.
type Limits struct {
	// Rate is the tenant's sustained rate in requests a second, the refill
	// rate of its token bucket; 0 means no rate limit.
	Rate float64
	// Burst is how many requests the tenant may send at once, the size of
	// its bucket: at least 1 with a Rate, 0 without.
	Burst int
	// InFlight bounds how many of the tenant's requests run at once (a
	// gRPC stream counts for its whole life); 0 means no bound.
	InFlight int
}

// fault says why l cannot be enforced, or "".
func (l Limits) fault() string {
	switch {
	case math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate < 0:
		return fmt.Sprintf("Rate %v is not a finite number of requests a second of 0 or more", l.Rate)
	case l.Rate > 0 && l.Burst < 1:
		return fmt.Sprintf("Rate %v has a Burst of %d: no request could ever be admitted", l.Rate, l.Burst)
	case l.Rate == 0 && l.Burst != 0:
		return fmt.Sprintf("Burst %d has no Rate: the bucket would never refill", l.Burst)
	case l.InFlight < 0:
		return fmt.Sprintf("InFlight %d is negative", l.InFlight)
	}
	return ""
}

// DefaultMaxTenants is how many tenants an Admission keeps state for when
// MaxTenants is 0.
const DefaultMaxTenants = 10000

// Admission limits each tenant's requests at the boundary: a token bucket
// (Limits.Rate, Limits.Burst) and a bound on requests in flight
// (Limits.InFlight), each tenant's its own, so one tenant over its limits
// is refused while the others are served. Set it on Config.Admission (and
// tenantgrpc.Config.Admission: one Admission on both boundaries counts
// their requests together). It runs after the tenant is resolved and
// before the handler, on tenant routes only: the operator listener is
// never limited, and a request refused before it has a tenant (a malformed
// header) counts against none. A request that names no tenant is the
// default tenant's and counts against it.
//
// A tenant's limits are Tenants[id] when present, else For(id) when For is
// set, else Default. Default, Tenants and MaxTenants are read once, when
// the boundary is built (fx.New), which refuses invalid ones with
// tenant_limits_invalid; do not change them afterwards.
type Admission struct {
	// Default are the limits of a tenant that Tenants does not list, when
	// For is nil.
	Default Limits
	// Tenants are limits of single tenants, overriding For and Default.
	Tenants map[tenancy.ID]Limits
	// For gives the limits of a tenant Tenants does not list: a lookup in
	// the tenant registry or of its plan. It is called on every request of
	// such a tenant, so it must be fast (a map or a cache, no round trip)
	// and safe for concurrent use. Limits it returns that cannot be
	// enforced refuse the request with tenant_limits_invalid (answered as
	// an internal error), never serve it unlimited.
	For func(tenancy.ID) Limits
	// MaxTenants bounds how many tenants' state (bucket and in-flight
	// count) is kept, for tenants with limits only: the recently active
	// ones. When it is full, a new tenant's state replaces that of the
	// least recently active tenant with nothing in flight on its shard
	// (else on another), which starts again with a full bucket when it
	// returns; a tenant with requests in flight is never forgotten. 0
	// means DefaultMaxTenants.
	MaxTenants int

	lim atomic.Pointer[limiter]
}

// Check refuses limits that cannot be enforced, with tenant_limits_invalid
// naming module: Default, every Tenants entry and MaxTenants. Both
// boundaries call it during fx.New; nil is valid (no admission).
func (a *Admission) Check(module string) error {
	if a == nil {
		return nil
	}
	l := a.limiter()
	var errs []error
	for _, f := range l.faults {
		errs = append(errs, &tenancy.Error{Code: tenancy.CodeTenantLimitsInvalid, Module: module, Detail: f, Fix: limitsFix})
	}
	return errors.Join(errs...)
}

const limitsFix = "give every limit a Rate above 0 with a Burst of at least 1 (or both 0 for no rate limit) and an InFlight of 0 (no bound) or more, and MaxTenants 0 (the default) or more"

// Tracked is how many tenants' state the admission keeps now: at most
// MaxTenants, plus for a moment the tenants whose state could not be
// forgotten because every other tenant had requests in flight.
func (a *Admission) Tracked() int {
	if a == nil {
		return 0
	}
	return int(a.limiter().count.Load())
}

// Ticket is an admitted request's hold on its tenant's in-flight count.
// Call Done once when the request ends. The zero Ticket holds nothing.
type Ticket struct {
	l  *limiter
	sh *shard
	e  *entry
}

// Done ends the request: its tenant's in-flight count goes down by one.
func (t Ticket) Done() {
	if t.e == nil {
		return
	}
	t.sh.mu.Lock()
	t.e.inFlight--
	if t.e.inFlight == 0 && t.l.count.Load() > t.l.max {
		t.sh.remove(t.e)
		t.l.count.Add(-1)
	}
	t.sh.mu.Unlock()
}

// LimitError is admission's refusal: a *tenancy.Error coded
// tenant_rate_limited or tenant_concurrency_limited (errors.As finds it
// through Unwrap), and the time after which a retry can succeed.
type LimitError struct {
	Err        *tenancy.Error
	RetryAfter time.Duration
}

func (e *LimitError) Error() string { return e.Err.Error() }

func (e *LimitError) Unwrap() error { return e.Err }

// RetryAfterOf is the time after which the request err refused can be
// retried: a LimitError's RetryAfter, rounded up to whole seconds (at
// least one), as Retry-After says it; false for any other error.
func RetryAfterOf(err error) (time.Duration, bool) {
	var le *LimitError
	if !errors.As(err, &le) {
		return 0, false
	}
	s := max(1, int64(math.Ceil(le.RetryAfter.Seconds())))
	return time.Duration(s) * time.Second, true
}

// Admit admits a request of tenant id on module's route, or refuses it
// with a *LimitError (the tenant is over its rate or has InFlight requests
// running) or tenant_limits_invalid (its limits cannot be enforced). An
// admitted request's Ticket must be Done when the request ends. A nil
// Admission admits everything.
func (a *Admission) Admit(module, route string, id tenancy.ID) (Ticket, error) {
	if a == nil {
		return Ticket{}, nil
	}
	l := a.limiter()
	if l.faults != nil {
		return Ticket{}, &tenancy.Error{Code: tenancy.CodeTenantLimitsInvalid, Module: module, Route: route,
			Detail: "the admission's limits are invalid: " + l.faults[0], Fix: limitsFix}
	}
	lim, ok := l.tenants[id]
	if !ok {
		lim = l.def
		if l.forFn != nil {
			lim = l.forFn(id)
		}
	}
	if lim == (Limits{}) {
		return Ticket{}, nil
	}
	if f := lim.fault(); f != "" {
		return Ticket{}, &tenancy.Error{Code: tenancy.CodeTenantLimitsInvalid, Module: module, Route: route,
			Detail: fmt.Sprintf("the limits Admission.For gives tenant %s cannot be enforced: %s", id, f), Fix: limitsFix}
	}
	return l.admit(module, route, id, lim)
}

func (a *Admission) limiter() *limiter {
	if l := a.lim.Load(); l != nil {
		return l
	}
	a.lim.CompareAndSwap(nil, newLimiter(a))
	return a.lim.Load()
}
