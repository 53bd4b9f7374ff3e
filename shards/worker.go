package shards

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// The defaults every worker gets for the fields of WorkerConfig left zero.
const (
	DefaultBackoff    = 200 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
)

// WorkerConfig is what every background worker's config embeds (the
// outbox relay, the Kafka and memory consumers, the Redis stream consumer
// and trim, the PostgreSQL sweep, and shards.Config): where its tenants
// come from, how it backs off, where its errors go and what fences it.
// Its defaults are set in one place (WithDefaults) and its values checked
// in one place (Check), so every worker reads them the same way.
type WorkerConfig struct {
	// Tenants, when set, makes the worker sharded: one shard bound to each
	// tenant it returns (a failing provider fails start). Left nil, the
	// worker runs once, bound to no tenant.
	Tenants TenantsFunc
	// Refresh is how often Tenants is read again (default DefaultEvery):
	// a tenant provisioned at run time gets its shard within that delay,
	// one that left the set has its shard stop after its work in flight.
	Refresh time.Duration
	// Backoff is the wait after a failure (default DefaultBackoff); a
	// worker that backs off per failure in a row doubles it up to
	// MaxBackoff (default DefaultMaxBackoff), as does a parked tenant
	// (Parking).
	Backoff, MaxBackoff time.Duration
	// OnError, when set, receives every error the worker meets (failed
	// passes, reads, handlers, deliveries, commits), and nothing is
	// logged for them. Left nil, each is logged at Warn on Logger with
	// the tenant it concerns.
	OnError func(error)
	// Logger is where errors are logged when OnError is nil. The adapters
	// set it to the app's *slog.Logger (or this one, when set) with the
	// worker's backend, module, route and name attached; default
	// slog.Default().
	Logger *slog.Logger
	// Fence, set by the adapters to the app's *modules.Suspensions,
	// registers every shard: a suspended tenant gets no shard, a running
	// shard's stop closes the moment its tenant is suspended, and an
	// Offboard waits for the shard to be done. Nil fences nothing.
	Fence Fence
}

// WithDefaults is c with every zero field set to its default. A negative
// field is left as it is: Check refuses it at wiring.
func (c WorkerConfig) WithDefaults() WorkerConfig {
	if c.Refresh == 0 {
		c.Refresh = DefaultEvery
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.Backoff)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Field is a worker's own duration or count, checked with the
// WorkerConfig's by Check; build it with Duration or Count.
type Field struct {
	name     string
	negative bool
	value    string
	kind     string
}

// Duration is a duration option of a worker, named as a user spells it.
func Duration(name string, d time.Duration) Field {
	return Field{name: name, negative: d < 0, value: d.String(), kind: "duration"}
}

// Count is a count option of a worker, named as a user spells it.
func Count[T ~int | ~int64](name string, n T) Field {
	return Field{name: name, negative: n < 0, value: fmt.Sprint(n), kind: "count"}
}

// Check is the one validation of a worker's options: a negative duration
// or count is refused rather than silently defaulted, as a typo or a
// subtraction gone wrong should not pass for "the default". config
// names the config type as the user spells it ("kafka.ConsumerConfig")
// and worker the worker, for the refusal.
func (c WorkerConfig) Check(config, worker string, own ...Field) []tenancy.Problem {
	fields := append([]Field{
		Duration("Refresh", c.Refresh),
		Duration("Backoff", c.Backoff),
		Duration("MaxBackoff", c.MaxBackoff),
	}, own...)
	var bad []tenancy.Problem
	for _, f := range fields {
		if !f.negative {
			continue
		}
		bad = append(bad, tenancy.Problem{
			Detail: fmt.Sprintf("worker %s: %s must not be negative", worker, f.name),
			Fix:    fmt.Sprintf("set %s.%s to 0 (its default) or a positive %s, not %s", config, f.name, f.kind, f.value),
		})
	}
	return bad
}

// NextBackoff is the wait after one more failure in a row, prev being the
// last wait (0 after a success): Backoff doubled per failure, capped at
// MaxBackoff. c must have its defaults (WithDefaults).
func (c WorkerConfig) NextBackoff(prev time.Duration) time.Duration {
	return doubled(prev, c.Backoff, c.MaxBackoff)
}

// doubled is the one backoff rule of workers and parking: twice the wait
// before, at least base, at most ceiling.
func doubled(prev, base, ceiling time.Duration) time.Duration {
	return min(max(2*prev, base), ceiling)
}

// Report hands err to OnError, or logs it at Warn on Logger under msg with
// the tenant ctx binds (key "tenant"), attrs, then err (key "error"): the
// keys of modules.LogWorkerError. A nil Logger is slog.Default().
func (c WorkerConfig) Report(ctx context.Context, msg string, err error, attrs ...any) {
	if c.OnError != nil {
		c.OnError(err)
		return
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	args := make([]any, 0, len(attrs)+4)
	if id, ok := tenancy.FromContext(ctx); ok {
		args = append(args, "tenant", id.String())
	}
	args = append(append(args, attrs...), "error", err)
	log.Warn(msg, args...)
}
