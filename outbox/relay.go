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
	// WorkerConfig: Tenants, when set, makes the relay sharded: one bound
	// pass per tenant it returns, read again every Refresh; left nil, the
	// relay claims unbound and binds each row's own tenant. After a failed
	// claim the wait doubles from Backoff up to MaxBackoff; a tenant whose
	// row fails is parked (shards.Parking) with the same bounds. OnError
	// receives failed passes and deliveries; left nil they are logged on
	// Logger (keys "tenant", "event", "attempts", "wait", "error"; a row
	// given up on and dropped at Error). The adapters' relays set Logger
	// to the app's logger with the backend, module, route and worker
	// attached, and Fence to the app's suspensions: a sharded pass stops
	// the moment its tenant is suspended, and an offboard waits for it.
	shards.WorkerConfig
	// BatchSize defaults to 100.
	BatchSize int
	// Idle is the wait when nothing is waiting (default 200ms).
	Idle time.Duration
	// DeadLetter receives the rows the relay gives up on (see GiveUpAfter
	// and Gone), under the tenant-global scope with Message.Tenant set;
	// the row is marked done once it took it. Nil: such rows are dropped
	// (marked done), each reported (logged at Error) with its tenant and
	// event id.
	DeadLetter Destination
	// GiveUpAfter is how many failed attempts in a row of one tenant's row
	// make the relay give up on that row; 0 (the default) never does: a
	// suspended tenant's rows wait, parked, until it is resumed.
	GiveUpAfter int
	// Gone, when set, is asked about a tenant whose row failed: true (the
	// tenant was offboarded for good) gives up on the row at once, so an
	// offboarded tenant's leftovers go to DeadLetter or are dropped
	// rather than waiting forever. Wire it to your tenant registry.
	Gone func(ctx context.Context, tenant tenancy.ID) bool
	// Wake, when set, cuts an idle wait short (an outbox wake channel).
	Wake <-chan struct{}
}

// Check is the relay's option problems: the WorkerConfig's, and a
// negative BatchSize, Idle or GiveUpAfter (refused, not defaulted). The
// adapters refuse them at fx.New as wiring_invalid; config names the
// type as the user spells it ("postgres.RelayConfig").
func (c RelayConfig) Check(config string) []tenancy.Problem {
	return c.WorkerConfig.Check(config, c.Name,
		shards.Count("BatchSize", c.BatchSize), shards.Duration("Idle", c.Idle), shards.Count("GiveUpAfter", c.GiveUpAfter))
}

// Relay forwards outbox rows to a destination, at least once.
type Relay struct {
	shards *shards.Group
	cfg    RelayConfig
	park   *shards.Parking
}

// NewRelay validates cfg.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.Source == nil || cfg.Destination == nil {
		return nil, errors.New("outbox: a relay needs a Source and a Destination")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if bad := cfg.Check("outbox.RelayConfig"); len(bad) > 0 {
		return nil, fmt.Errorf("outbox: relay %s: %s; %s", cfg.Name, bad[0].Detail, bad[0].Fix)
	}
	if cfg.Idle == 0 {
		cfg.Idle = 200 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default().With("worker", cfg.Name)
	}
	cfg.WorkerConfig = cfg.WithDefaults()
	return &Relay{cfg: cfg, park: shards.NewParking(cfg.Backoff, cfg.MaxBackoff)}, nil
}

// Start launches the relay's passes (one, or one per tenant when sharded)
// and returns; Stop ends them.
func (r *Relay) Start(ctx context.Context) error {
	g, err := shards.StartWorker(ctx, shards.Config{Name: r.cfg.Name, WorkerConfig: r.cfg.WorkerConfig, Run: r.loop})
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
		n, failed, err := r.pass(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			wait = r.cfg.NextBackoff(wait)
			r.cfg.Report(ctx, "tenantwire: relay pass failed; backing off", fmt.Errorf("outbox: relay %s: pass: %w", r.cfg.Name, err), "wait", wait)
		case n > 0 || failed != nil:
			// A failure parked its tenant: the next claim leaves its rows
			// out, so go on at once with the other tenants'.
			wait = 0
		default:
			wait = r.cfg.Idle
		}
		if id, ok := tenancy.FromContext(ctx); ok {
			// A sharded pass serves one tenant: parked, it waits its backoff.
			wait = max(wait, time.Until(r.park.Until(id)))
		}
	}
}

// Pass claims one batch under ctx and delivers it: each row under its own
// tenant (or the tenant-global scope). A row that fails parks its tenant:
// that tenant's later rows wait behind it (their order holds), other
// tenants' rows go on. A parked tenant's rows are left out of the claim
// when the Source is a SkippingSource, and passed over otherwise. It
// returns how many rows were marked done and every failure, joined.
func (r *Relay) Pass(ctx context.Context) (int, error) {
	n, failed, err := r.pass(ctx)
	return n, errors.Join(failed, err)
}

// pass is Pass: failed joins the failed deliveries (their tenants are
// parked, no reason for the relay to back off), err a failed claim or
// completion, or a broken source.
func (r *Relay) pass(ctx context.Context) (n int, failed, err error) {
	skip, _ := r.park.Skip(time.Now())
	var batch Batch
	if s, ok := r.cfg.Source.(SkippingSource); ok && len(skip) > 0 {
		batch, err = s.ClaimSkipping(ctx, r.cfg.BatchSize, skip)
	} else {
		batch, err = r.cfg.Source.Claim(ctx, r.cfg.BatchSize)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("claim: %w", err)
	}
	msgs := batch.Messages()
	if len(msgs) == 0 {
		batch.Abandon(ctx)
		return 0, nil, nil
	}
	bound, sharded := tenancy.FromContext(ctx)
	var done []Message
	var errs []error // failed deliveries
	var broken error
	// held: tenants parked during this pass, whose later rows wait.
	held := map[tenancy.ID]bool{}
	for _, m := range msgs {
		if sharded && m.Tenant != bound {
			// A source that returns another tenant's row to a sharded pass
			// is broken; refuse rather than forward it under either tenant.
			broken = fmt.Errorf("event %s: source returned tenant %s to the pass of %s", m.EventID, m.Tenant, bound)
			break
		}
		if held[m.Tenant] || r.park.Parked(m.Tenant, time.Now()) {
			held[m.Tenant] = true
			continue
		}
		if ctx.Err() != nil {
			break
		}
		derr := r.cfg.Destination.Deliver(Bind(ctx, m), m)
		if derr == nil {
			r.park.Ok(m.Tenant)
			done = append(done, m)
			continue
		}
		errs = append(errs, fmt.Errorf("deliver event %s: %w", m.EventID, derr))
		if r.giveUp(ctx, m, derr) {
			done = append(done, m)
			continue
		}
		held[m.Tenant] = true
	}
	// Mark what was delivered even when stopping: the destination has it.
	failed = errors.Join(errs...)
	if cerr := batch.Complete(context.WithoutCancel(ctx), done); cerr != nil {
		return 0, failed, errors.Join(broken, fmt.Errorf("complete: %w", cerr))
	}
	return len(done), failed, broken
}
