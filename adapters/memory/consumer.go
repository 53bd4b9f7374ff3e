package memory

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/shards"
)

// ConsumerConfig wires a background consumer of a stream route.
type ConsumerConfig struct {
	// Name identifies the worker in refusals and logs.
	Name string
	// Stream is the stream route to drain.
	Stream string
	// Tenants, when set, makes the consumer sharded: one bound reader per
	// tenant it returns, read again every Refresh (default
	// shards.DefaultEvery) so that the readers follow the set. Left nil, the
	// consumer reads unbound, which is refused at fx.New over a
	// tenant-scoped stream.
	Tenants shards.TenantsFunc
	Refresh time.Duration
	// Handle is called once per message, under the reader's context (bound
	// to its tenant when sharded). An error retries the message.
	Handle func(ctx context.Context, m Message) error
	// Retry is the wait before retrying a failed message; default 100ms.
	Retry time.Duration
}

// Consume adds a background consumer to the module. It declares itself with
// modules.Worker, so its binding is checked with the floors during fx.New;
// readers start in OnStart and stop in OnStop.
func Consume(cfg ConsumerConfig) Option {
	return optionFunc(func(c *config) {
		binding := floors.Unbound
		if cfg.Tenants != nil {
			binding = floors.Sharded
		}
		w := modules.WorkerSpec{Worker: floors.Worker{Name: cfg.Name, Route: cfg.Stream, Binding: binding}}
		if cfg.Name == "" || cfg.Handle == nil {
			w.Problems = []modules.Problem{{Detail: "a consumer has no Name or no Handle", Fix: "set ConsumerConfig.Name (the worker's name in refusals and logs) and ConsumerConfig.Handle (the function that handles each message)"}}
		} else {
			// Run only when the stream is a route of the module; the worker
			// check reports worker_route_unknown otherwise.
			w.Run = fx.Invoke(func(lc fx.Lifecycle, s *store) error {
				sc, ok := c.streams[cfg.Stream]
				if !ok {
					return nil
				}
				cons := &consumer{cfg: cfg, st: newStreams(s, cfg.Stream, sc)}
				lc.Append(fx.Hook{OnStart: cons.start, OnStop: cons.stop})
				return nil
			})
		}
		c.workers = append(c.workers, w)
	})
}

type consumer struct {
	cfg    ConsumerConfig
	st     *Stream
	shards *shards.Group
}

func (c *consumer) start(ctx context.Context) error {
	g, err := shards.StartWorker(ctx, shards.Config{Name: c.cfg.Name, Tenants: c.cfg.Tenants, Every: c.cfg.Refresh, Run: c.run,
		Fence: c.st.s.suspensions.Fence()})
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
	retry := c.cfg.Retry
	if retry <= 0 {
		retry = 100 * time.Millisecond
	}
	var cursor int64
	for {
		msgs, wake, err := c.st.read(ctx, cursor, 100)
		if err != nil {
			wake = nil
		}
		for _, m := range msgs {
			for {
				if err := c.cfg.Handle(ctx, m); err == nil {
					break
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
