package postgres

import (
	"context"
	"fmt"
	"log/slog"
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
	// Tenants makes the sweep sharded: one bound pass per assigned tenant.
	// A tenant-scoped route needs it; unbound, the sweep is refused at
	// fx.New with tenant_global_required.
	Tenants shards.TenantsFunc
	// OnError observes sweep errors (default: a warning on the app's
	// *slog.Logger, or slog.Default()).
	OnError func(error)
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
	if sc.Every <= 0 {
		sc.Every = time.Minute
	}
	w := workerSpec{name: sc.Name, route: route, what: "sweep", kinds: []floors.Kind{kindInbox, kindIdempotency, kindOutbox}, binding: floors.Unbound}
	if sc.Tenants != nil {
		w.binding = floors.Sharded
	}
	if sc.Retain < 0 {
		w.bad = append(w.bad, problem{"Retain must not be negative", fmt.Sprintf("set SweepConfig.Retain to 0 (the default) or a positive duration, not %s", sc.Retain)})
	}
	w.build = func(obj any, log workerLog) (runner, error) {
		retain := sc.Retain
		if _, idem := obj.(*Idempotency); !idem && retain == 0 {
			retain = 24 * time.Hour
		}
		return &sweepRunner{cfg: sc, target: obj.(sweeper), retain: retain, log: log(nil)}, nil
	}
	return func(c *config) { c.workers = append(c.workers, w) }
}

// sweepRunner runs a sweep every interval, once per scope.
type sweepRunner struct {
	cfg    SweepConfig
	target sweeper
	retain time.Duration
	log    *slog.Logger
	shards *shards.Group
}

func (s *sweepRunner) Start(ctx context.Context) error {
	pass := func(sc context.Context) {
		if _, err := s.target.sweep(sc, s.retain); err != nil && sc.Err() == nil {
			s.report(sc, err)
		}
	}
	g, err := shards.StartWorker(ctx, shards.Config{Name: s.cfg.Name, Tenants: s.cfg.Tenants, Logger: s.log,
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

// report hands a failed sweep to OnError, or logs it through the app's
// logger.
func (s *sweepRunner) report(ctx context.Context, err error) {
	if s.cfg.OnError != nil {
		s.cfg.OnError(err)
		return
	}
	modules.LogWorkerError(ctx, s.log, "tenantwire: sweep failed", err)
}
