package memory

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ConsumerConfig wires a background consumer of a stream route.
type ConsumerConfig struct {
	// Name identifies the worker in refusals and logs.
	Name string
	// Stream is the stream route to drain.
	Stream string
	// WorkerConfig: Tenants, when set, makes the consumer sharded: one
	// bound reader per tenant it returns, read again every Refresh so that
	// the readers follow the set. Left nil, the consumer reads unbound,
	// which is refused at fx.New over a tenant-scoped stream. Backoff is
	// the wait before retrying a failed message, and the poll of a reader
	// with nothing to read. OnError observes handler errors (default: a
	// warning on Logger, else the app's *slog.Logger, else slog.Default()).
	// Fence is set by the module.
	shards.WorkerConfig
	// Handle is called once per message, under the reader's context (bound
	// to its tenant when sharded). An error retries the message.
	Handle func(ctx context.Context, m Message) error
}

// Consume adds a background consumer to the module. It declares itself with
// modules.Worker, so its binding is checked with the floors during fx.New;
// readers start in OnStart and stop in OnStop.
func Consume(cfg ConsumerConfig) Option {
	return modules.Own(func(c *config) {
		binding := floors.Unbound
		if cfg.Tenants != nil {
			binding = floors.Sharded
		}
		w := modules.WorkerSpec{Worker: floors.Worker{Name: cfg.Name, Route: cfg.Stream, Binding: binding}}
		w.Problems = append(w.Problems, cfg.Check("memory.ConsumerConfig", cfg.Name)...)
		if cfg.Name == "" || cfg.Handle == nil {
			w.Problems = append(w.Problems, tenancy.Problem{Detail: "a consumer has no Name or no Handle", Fix: "set ConsumerConfig.Name (the worker's name in refusals and logs) and ConsumerConfig.Handle (the function that handles each message)"})
		} else if len(w.Problems) == 0 {
			// Run only when the stream is a route of the module; the worker
			// check reports worker_route_unknown otherwise.
			w.Run = fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, s *store, app *slog.Logger) error {
				sc, ok := c.streams[cfg.Stream]
				if !ok {
					return nil
				}
				cons := &consumer{cfg: cfg, st: newStreams(s, cfg.Stream, sc), wc: cfg.WorkerConfig}
				if cons.wc.Logger != nil {
					app = cons.wc.Logger
				}
				cons.wc.Logger = modules.WorkerLogger(app, rules.Name, s.module, cfg.Stream, cfg.Name)
				cons.wc.Fence = s.suspensions.Fence()
				cons.wc = cons.wc.WithDefaults()
				lc.Append(fx.Hook{OnStart: cons.start, OnStop: cons.stop})
				return nil
			}, fx.ParamTags(``, ``, `optional:"true"`)))
		}
		c.workers = append(c.workers, w)
	})
}

type consumer struct {
	cfg ConsumerConfig
	// wc is cfg's WorkerConfig with its defaults, the worker's logger and
	// the app's suspensions.
	wc     shards.WorkerConfig
	st     *Stream
	shards *shards.Group
}

func (c *consumer) start(ctx context.Context) error {
	g, err := shards.StartWorker(ctx, shards.Config{Name: c.cfg.Name, WorkerConfig: c.wc, Run: c.run})
	if err != nil {
		return fmt.Errorf("memory: consumer %s: %w", c.cfg.Name, err)
	}
	c.shards = g
	return nil
}

// stop ends the readers and waits for them, at most as long as ctx
// allows, sharded or not.
func (c *consumer) stop(ctx context.Context) error {
	return c.shards.Stop(ctx)
}

// run drains the stream under ctx (bound to its tenant, or not) until ctx
// ends or stop closes, a message in flight handled first.
func (c *consumer) run(ctx context.Context, stop <-chan struct{}) {
	retry := c.wc.Backoff
	var cursor int64
	for {
		msgs, wake, err := c.st.read(ctx, cursor, 100)
		if err != nil {
			wake = nil
		}
		for _, m := range msgs {
			for {
				err := c.cfg.Handle(ctx, m)
				if err == nil {
					break
				}
				if ctx.Err() == nil {
					c.wc.Report(ctx, "tenantwire: consumer failed", fmt.Errorf("memory: consumer %s: message %d: %w", c.cfg.Name, m.Offset, err))
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(retry):
				}
			}
			cursor = m.Offset
		}
		if len(msgs) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-wake:
		case <-time.After(retry):
		}
	}
}
