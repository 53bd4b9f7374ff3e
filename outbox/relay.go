package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Source is an outbox a relay drains. Claim takes up to limit undelivered
// rows so that no concurrent claimer gets them (FOR UPDATE SKIP LOCKED, a
// lease) and returns them as a Batch; an empty batch means nothing is
// waiting. A sharded relay calls Claim under a context bound to one
// tenant, and the source then claims only that tenant's rows.
type Source interface {
	Claim(ctx context.Context, limit int) (Batch, error)
}

// Writer stores messages for a relay to forward, under the tenant bound to
// ctx (or, on an outbox that is not tenant-scoped, as deployment-wide rows
// under tenancy.WithGlobal): postgres.Outbox and mongo.Outbox, which are
// Sources too. An empty EventID gets a random one.
type Writer interface {
	Write(ctx context.Context, msgs ...Message) error
}

// Batch is a claim on some rows.
type Batch interface {
	Messages() []Message
	// Complete marks the delivered messages done and releases the rest of
	// the claim for a later attempt. A message is named by its Tenant and
	// EventID together: event ids are unique per tenant, not globally.
	Complete(ctx context.Context, delivered []Message) error
	// Abandon releases the whole claim; nothing is marked delivered.
	Abandon(ctx context.Context)
}

// RelayConfig configures a relay.
type RelayConfig struct {
	Name        string
	Source      Source
	Destination Destination
	// Tenants, when set, makes the relay sharded: one bound pass per
	// tenant it returns (a failing provider fails start). It is read again
	// every Refresh (default shards.DefaultEvery), so a tenant provisioned
	// at run time is relayed within that delay and one that left the set
	// stops after its pass in flight. Left nil, the relay claims unbound
	// and binds each row's own tenant.
	Tenants shards.TenantsFunc
	Refresh time.Duration
	// BatchSize defaults to 100.
	BatchSize int
	// Idle is the wait when nothing is waiting (default 200ms); after an
	// error the wait doubles up to MaxBackoff (default 5s).
	Idle, MaxBackoff time.Duration
	// Wake, when set, cuts an idle wait short (an outbox wake channel).
	Wake <-chan struct{}
	// Logger receives failed passes (keys "tenant" when sharded, "wait",
	// "error"). The adapters' relays pass the app's logger with the
	// backend, module, route and worker attached; left nil here it is
	// slog.Default() with the "worker" key.
	Logger *slog.Logger
	// Fence, set by the adapters' relays to the app's suspensions, stops
	// a sharded relay's pass the moment its tenant is suspended, and
	// makes an offboard wait for it (see shards.Config.Fence).
	Fence shards.Fence
}

// Relay forwards outbox rows to a destination, at least once.
type Relay struct {
	shards *shards.Group
	cfg    RelayConfig
}

// NewRelay validates cfg.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.Source == nil || cfg.Destination == nil {
		return nil, errors.New("outbox: a relay needs a Source and a Destination")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 200 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default().With("worker", cfg.Name)
	}
	return &Relay{cfg: cfg}, nil
}

// Start launches the relay's passes (one, or one per tenant when sharded)
// and returns; Stop ends them.
func (r *Relay) Start(ctx context.Context) error {
	g, err := shards.StartWorker(ctx, shards.Config{Name: r.cfg.Name, Tenants: r.cfg.Tenants, Every: r.cfg.Refresh, Logger: r.cfg.Logger,
		Fence: r.cfg.Fence, Run: r.loop})
	if err != nil {
		return fmt.Errorf("outbox: relay %s: %w", r.cfg.Name, err)
	}
	r.shards = g
	return nil
}

// Stop ends every pass and waits for in-flight deliveries to finish or be
// abandoned.
func (r *Relay) Stop(ctx context.Context) error {
	return r.shards.Stop(ctx)
}

// loop runs passes under ctx until it ends, or until stop closes (its
// tenant left the set): a pass in flight finishes first.
func (r *Relay) loop(ctx context.Context, stop <-chan struct{}) {
	wait := time.Duration(0)
	for {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-stop:
				t.Stop()
				return
			case <-r.cfg.Wake:
			case <-t.C:
			}
			t.Stop()
		}
		select {
		case <-stop:
			return
		default:
		}
		if ctx.Err() != nil {
			return
		}
		n, err := r.Pass(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			wait = min(max(2*wait, r.cfg.Idle), r.cfg.MaxBackoff)
			if id, ok := tenancy.FromContext(ctx); ok {
				r.cfg.Logger.Warn("tenantwire: relay pass failed; backing off", "tenant", id.String(), "wait", wait, "error", err)
			} else {
				r.cfg.Logger.Warn("tenantwire: relay pass failed; backing off", "wait", wait, "error", err)
			}
		case n == 0:
			wait = r.cfg.Idle
		default:
			wait = 0
		}
	}
}

// Pass claims one batch under ctx and delivers it: each row under its own
// tenant (or the tenant-global scope), stopping at the first failure so
// that rows of one tenant keep their order. It returns how many rows were
// delivered.
func (r *Relay) Pass(ctx context.Context) (int, error) {
	batch, err := r.cfg.Source.Claim(ctx, r.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	msgs := batch.Messages()
	if len(msgs) == 0 {
		batch.Abandon(ctx)
		return 0, nil
	}
	bound, sharded := tenancy.FromContext(ctx)
	var delivered []Message
	var deliverErr error
	for _, m := range msgs {
		if sharded && m.Tenant != bound {
			// A source that returns another tenant's row to a sharded pass
			// is broken; refuse rather than forward it under either tenant.
			deliverErr = fmt.Errorf("event %s: source returned tenant %s to the pass of %s", m.EventID, m.Tenant, bound)
			break
		}
		if err := r.cfg.Destination.Deliver(Bind(ctx, m), m); err != nil {
			deliverErr = fmt.Errorf("deliver event %s: %w", m.EventID, err)
			break
		}
		delivered = append(delivered, m)
	}
	// Mark what was delivered even when stopping: the destination has it.
	if err := batch.Complete(context.WithoutCancel(ctx), delivered); err != nil {
		return 0, errors.Join(deliverErr, fmt.Errorf("complete: %w", err))
	}
	return len(delivered), deliverErr
}
