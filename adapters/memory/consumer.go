package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ConsumerConfig wires a background consumer of a stream route.
type ConsumerConfig struct {
	// Name identifies the worker in refusals and logs.
	Name string
	// Stream is the stream route to drain.
	Stream string
	// Tenants, when set, makes the consumer sharded: one bound reader per
	// tenant it returns at start. Left nil, the consumer reads unbound,
	// which is refused at fx.New over a tenant-scoped stream.
	Tenants func(context.Context) ([]tenancy.ID, error)
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
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (c *consumer) start(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.Background())
	readers := []context.Context{runCtx}
	if c.cfg.Tenants != nil {
		ids, err := c.cfg.Tenants(ctx)
		if err != nil {
			cancel()
			return fmt.Errorf("memory: consumer %s: tenant set: %w", c.cfg.Name, err)
		}
		readers = readers[:0]
		for _, id := range ids {
			readers = append(readers, tenancy.WithTenant(runCtx, id))
		}
	}
	c.cancel = cancel
	for _, bound := range readers {
		c.wg.Add(1)
		go c.run(bound)
	}
	return nil
}

func (c *consumer) stop(context.Context) error {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	return nil
}

// run drains the stream under ctx (bound to its tenant, or not) until stopped.
func (c *consumer) run(ctx context.Context) {
	defer c.wg.Done()
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
		case <-wake:
		case <-time.After(retry):
		}
	}
}
