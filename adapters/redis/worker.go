package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Handler handles one stream entry. Its ctx is bound to the entry's tenant
// when the worker is sharded. Returning nil acknowledges the entry; an
// error leaves it pending, for ClaimAfter to redeliver.
type Handler func(ctx context.Context, e Entry) error

// ConsumerConfig configures a consumer-group worker.
type ConsumerConfig struct {
	// Name names the worker in the wiring; default "<route>-consumer".
	Name string
	// Group is the consumer group (required); Consumer names this process
	// in it (default host name and pid).
	Group, Consumer string
	// Handle is called for every entry (required).
	Handle Handler
	// WorkerConfig: Tenants makes the worker sharded: one bound pass per
	// assigned tenant, each reading only that tenant's stream, read again
	// every Refresh. Without it the worker reads unbound, which a
	// tenant-scoped stream refuses at fx.New. After a failed pass it waits
	// Backoff, doubled per failure in a row up to MaxBackoff. OnError
	// observes read and handler errors (default: a warning on Logger, else
	// the app's *slog.Logger, else slog.Default()). Fence is set by the
	// module.
	shards.WorkerConfig
	// Batch is the most entries read per pass (default 16).
	Batch int64
	// Block is how long an idle worker waits for entries (default 1s); it
	// is also the longest a stop waits for an in-flight read.
	Block time.Duration
	// ClaimAfter, when positive, redelivers entries left pending that long.
	ClaimAfter time.Duration
}

// TrimConfig configures a trim sweep.
type TrimConfig struct {
	// Name names the worker in the wiring; default "<route>-trim".
	Name string
	// MaxLen is about how many newest entries each stream keeps (required).
	MaxLen int64
	// Every is the sweep interval (default 1 minute); a failed trim waits
	// for the next one.
	Every time.Duration
	// WorkerConfig: Tenants makes the sweep sharded, as for
	// ConsumerConfig; OnError observes trim errors.
	shards.WorkerConfig
}

// workerSpec is a worker bound to one stream route of its module.
type workerSpec struct {
	name    string
	route   string
	sharded bool
	// run serves one scope (the unbound stream, or one tenant's under a
	// bound ctx) until ctx ends or stop closes; sharded, it never blocks in
	// Redis, so a thousand tenants do not hold a thousand connections.
	run func(ctx context.Context, stop <-chan struct{}, s *Stream, wc shards.WorkerConfig)
	// wc is the worker's WorkerConfig as set; invoke adds its Logger,
	// Fence and defaults.
	wc  shards.WorkerConfig
	bad []tenancy.Problem
}

// StreamConsumer adds a consumer-group worker over a stream route of the
// module. It is declared to enforcement: unbound over a tenant-scoped
// stream it is refused with tenant_global_required during fx.New.
func StreamConsumer(route string, cfg ConsumerConfig) Option {
	if cfg.Name == "" {
		cfg.Name = route + "-consumer"
	}
	if cfg.Consumer == "" {
		host, _ := os.Hostname()
		cfg.Consumer = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	bad := cfg.Check("redis.ConsumerConfig", cfg.Name, shards.Count("Batch", cfg.Batch),
		shards.Duration("Block", cfg.Block), shards.Duration("ClaimAfter", cfg.ClaimAfter))
	cfg.Batch = cmp0(cfg.Batch, 16)
	cfg.Block = cmp0(cfg.Block, time.Second)
	if cfg.Group == "" {
		bad = append(bad, tenancy.Problem{Detail: fmt.Sprintf("consumer %q has no consumer group", cfg.Name), Fix: "set ConsumerConfig.Group to the group name"})
	}
	if cfg.Handle == nil {
		bad = append(bad, tenancy.Problem{Detail: fmt.Sprintf("consumer %q has no handler", cfg.Name), Fix: "set ConsumerConfig.Handle to the function that handles each entry"})
	}
	return modules.Own(func(c *config) {
		c.workers = append(c.workers, workerSpec{
			name: cfg.Name, route: route, sharded: cfg.Tenants != nil, wc: cfg.WorkerConfig, bad: bad,
			run: func(ctx context.Context, stop <-chan struct{}, s *Stream, wc shards.WorkerConfig) {
				consume(ctx, stop, s, cfg, wc)
			},
		})
	})
}

// StreamTrim adds a trim sweep over a stream route of the module, checked
// like StreamConsumer.
func StreamTrim(route string, cfg TrimConfig) Option {
	if cfg.Name == "" {
		cfg.Name = route + "-trim"
	}
	bad := cfg.Check("redis.TrimConfig", cfg.Name, shards.Duration("Every", cfg.Every))
	cfg.Every = cmp0(cfg.Every, time.Minute)
	if cfg.MaxLen <= 0 {
		bad = append(bad, tenancy.Problem{Detail: fmt.Sprintf("trim sweep %q needs a positive MaxLen", cfg.Name),
			Fix: fmt.Sprintf("set TrimConfig.MaxLen to how many newest entries each stream keeps (now %d)", cfg.MaxLen)})
	}
	return modules.Own(func(c *config) {
		c.workers = append(c.workers, workerSpec{
			name: cfg.Name, route: route, sharded: cfg.Tenants != nil, wc: cfg.WorkerConfig, bad: bad,
			run: func(ctx context.Context, stop <-chan struct{}, s *Stream, wc shards.WorkerConfig) {
				shards.Tick(ctx, stop, cfg.Every, func(ctx context.Context) {
					if _, err := s.Trim(ctx, cfg.MaxLen); err != nil && ctx.Err() == nil {
						wc.Report(ctx, "tenantwire: stream trim failed", err)
					}
				})
			},
		})
	})
}

func cmp0[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (w workerSpec) decl(module string) floors.Worker {
	b := floors.Unbound
	if w.sharded {
		b = floors.Sharded
	}
	return floors.Worker{Name: w.name, Module: module, Route: w.route, Binding: b}
}

// invoke starts the worker in OnStart and stops it in OnStop: one scope
// unbound, or a shard per assigned tenant that follows the tenant set.
func (w workerSpec) invoke(module string) fx.Option {
	return fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, s *Stream, app *slog.Logger) {
		wc := w.wc
		if wc.Logger != nil {
			app = wc.Logger
		}
		wc.Logger, wc.Fence = modules.WorkerLogger(app, rules.Name, module, w.route, w.name), s.core.suspensions.Fence()
		wc = wc.WithDefaults()
		var group *shards.Group
		lc.Append(fx.Hook{
			OnStart: func(startCtx context.Context) error {
				g, err := shards.StartWorker(startCtx, shards.Config{Name: w.name, WorkerConfig: wc,
					Run: func(ctx context.Context, stop <-chan struct{}) { w.run(ctx, stop, s, wc) }})
				if err != nil {
					return fmt.Errorf("redis worker %s: %w", w.name, err)
				}
				group = g
				return nil
			},
			OnStop: func(stopCtx context.Context) error {
				if err := group.Stop(stopCtx); err != nil {
					return fmt.Errorf("redis worker %s: stop: %w", w.name, err)
				}
				return nil
			},
		})
	}, fx.ParamTags(``, nameTag(w.route), `optional:"true"`)))
}

// consume is the consumer loop of one scope (ctx, bound when sharded):
// an unbound stream lets Redis wait for entries; a shard polls, so that
// many tenants hold no connection each while idle.
func consume(ctx context.Context, stop <-chan struct{}, s *Stream, cfg ConsumerConfig, wc shards.WorkerConfig) {
	block := cfg.Block
	if wc.Tenants != nil {
		block = 0
	}
	backoff := time.Duration(0) // the last wait after a failure; 0 after a success
	for ctx.Err() == nil {
		select {
		case <-stop:
			return
		default:
		}
		n, err := consumeOnce(ctx, s, cfg, block)
		wait := time.Duration(0)
		switch {
		case err != nil && ctx.Err() == nil:
			backoff = wc.NextBackoff(backoff)
			wait = backoff
			wc.Report(ctx, "tenantwire: stream consumer failed", err)
		case n == 0 && block == 0:
			backoff, wait = 0, cfg.Block
		default:
			backoff = 0
		}
		if wait > 0 && !shards.Sleep(ctx, stop, wait) {
			return
		}
	}
}

func consumeOnce(ctx context.Context, s *Stream, cfg ConsumerConfig, block time.Duration) (int, error) {
	var batch []Entry
	if cfg.ClaimAfter > 0 {
		claimed, err := s.Claim(ctx, cfg.Group, cfg.Consumer, cfg.ClaimAfter, cfg.Batch)
		if err != nil {
			return 0, err
		}
		batch = claimed
	}
	if len(batch) == 0 {
		fresh, err := s.ReadGroup(ctx, cfg.Group, cfg.Consumer, cfg.Batch, block)
		if err != nil {
			return 0, err
		}
		batch = fresh
	}
	var errs []error
	for _, e := range batch {
		if err := cfg.Handle(ctx, e); err != nil {
			errs = append(errs, fmt.Errorf("entry %s: %w", e.ID, err))
			continue
		}
		if err := s.Ack(ctx, cfg.Group, e.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return len(batch), errors.Join(errs...)
}

// sleep waits d or until ctx ends; false when ctx ended.
