package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/shards"
)

// SweepConfig configures a retention sweep.
type SweepConfig struct {
	// Name names the worker in the wiring; default "<route>-sweep".
	Name string
	// Every is the sweep interval (default 1 minute).
	Every time.Duration
	// Retain is how long rows are kept: inbox marks after they were seen,
	// outbox rows after delivery (default 24h for both), idempotency
	// entries after they expired (default 0).
	Retain time.Duration
	// WorkerConfig: Tenants makes the sweep sharded: one bound pass per
	// assigned tenant, read again every Refresh. A tenant-scoped route
	// needs it; unbound, the sweep is refused at fx.New with
	// tenant_global_required. A failed pass waits for the next one (Every).
	// OnError observes sweep errors (default: a warning on Logger, else
	// the app's *slog.Logger, else slog.Default()). Fence is set by the
	// module: a suspended tenant's pass stops, and an offboard waits for
	// it.
	shards.WorkerConfig
}

// sweeper is a route a retention sweep can drain.
type sweeper interface {
	sweep(ctx context.Context, retain time.Duration) (int64, error)
}

// Sweep adds a retention sweep over an inbox, idempotency or outbox route
// of the module.
func Sweep(route string, sc SweepConfig) Option {
	if sc.Name == "" {
		sc.Name = route + "-sweep"
	}
	every := sc.Every
	if sc.Every == 0 {
		sc.Every = time.Minute
	}
	w := workerSpec{name: sc.Name, route: route, what: "sweep", kinds: []floors.Kind{kindInbox, kindIdempotency, kindOutbox}, binding: floors.Unbound}
	if sc.Tenants != nil {
		w.binding = floors.Sharded
	}
	w.checked(sc.Check("postgres.SweepConfig", sc.Name, shards.Duration("Every", every), shards.Duration("Retain", sc.Retain)))
	w.build = func(obj any, wire workerWire) (runner, error) {
		retain := sc.Retain
		if _, idem := obj.(*Idempotency); !idem && retain == 0 {
			retain = 24 * time.Hour
		}
		cfg := sc
		cfg.WorkerConfig = wire(cfg.WorkerConfig)
		return &sweepRunner{cfg: cfg, target: obj.(sweeper), retain: retain}, nil
	}
	return modules.Own(func(c *config) { c.workers = append(c.workers, w) })
}

// sweepRunner runs a sweep every interval, once per scope.
type sweepRunner struct {
	cfg    SweepConfig // its WorkerConfig wired
	target sweeper
	retain time.Duration
	shards *shards.Group
}

func (s *sweepRunner) Start(ctx context.Context) error {
	pass := func(sc context.Context) {
		if _, err := s.target.sweep(sc, s.retain); err != nil && sc.Err() == nil {
			s.cfg.Report(sc, "tenantwire: sweep failed", err)
		}
	}
	g, err := shards.StartWorker(ctx, shards.Config{Name: s.cfg.Name, WorkerConfig: s.cfg.WorkerConfig,
		Run: func(sc context.Context, stop <-chan struct{}) { shards.Tick(sc, stop, s.cfg.Every, pass) }})
	if err != nil {
		return fmt.Errorf("postgres sweep %s: %w", s.cfg.Name, err)
	}
	s.shards = g
	return nil
}

func (s *sweepRunner) Stop(ctx context.Context) error {
	if err := s.shards.Stop(ctx); err != nil {
		return fmt.Errorf("postgres sweep %s: stop: %w", s.cfg.Name, err)
	}
	return nil
}
