package modules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
)

// defaultSuspendedRefresh is how often a replica rereads the suspended set
// unless LifecycleConfig.Refresh says otherwise.
const defaultSuspendedRefresh = 5 * time.Second

// LifecycleConfig makes every replica of the app follow one suspended set
// kept in the app's own store (its tenant registry).
type LifecycleConfig struct {
	// Suspended reads the suspended tenants from the app's store. It is
	// called at start (an error fails the start: a replica that cannot
	// know who is suspended does not serve) and every Refresh; a failed
	// refresh keeps the last set and is logged.
	Suspended func(ctx context.Context) ([]tenancy.ID, error)
	// Refresh is the delay between reads; zero means 5s. A suspension
	// recorded in the store reaches every replica within it.
	Refresh time.Duration
	// Placed, when set, reads every tenant's plan and placements from the
	// store (see Placed), at start and every Refresh like Suspended; a
	// failed read fails the start, and a failed refresh keeps the last
	// records.
	Placed func(ctx context.Context) ([]Placed, error)
}

// LifecycleWith is Lifecycle whose suspensions follow the store cfg reads,
// on every replica. Suspend and Resume still apply at once on the replica
// that runs them. A local suspension the store does not list yet (an
// Offboard, or a Suspend whose record is not written) holds on that
// replica until the store lists the tenant or Resume runs there, so a
// refresh never lifts it early; from then on the store decides.
func LifecycleWith(cfg LifecycleConfig) fx.Option {
	return fx.Options(Lifecycle(), fx.Invoke(func(in suspendedSyncIn) error {
		lc, s, log := in.Lifecycle, in.Suspensions, in.Logger
		if cfg.Suspended == nil {
			return errors.New("modules.LifecycleWith: LifecycleConfig.Suspended is nil; give it the function that reads the suspended tenants from your store, or use modules.Lifecycle()")
		}
		if cfg.Refresh < 0 {
			return fmt.Errorf("modules.LifecycleWith: LifecycleConfig.Refresh is %s; give a positive delay, or zero for %s", cfg.Refresh, defaultSuspendedRefresh)
		}
		every := cfg.Refresh
		if every == 0 {
			every = defaultSuspendedRefresh
		}
		if log == nil {
			log = slog.Default()
		}
		s.mu.Lock()
		s.refresh = every
		s.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		lc.Append(fx.Hook{
			OnStart: func(start context.Context) error {
				ids, err := cfg.Suspended(start)
				if err != nil {
					return fmt.Errorf("modules: reading the suspended tenants: %w", err)
				}
				if cfg.Placed != nil {
					recs, err := cfg.Placed(start)
					if err != nil {
						return fmt.Errorf("modules: reading the tenants' placements: %w", err)
					}
					s.followPlaced(recs)
				}
				s.follow(ids)
				wg.Go(func() {
					t := time.NewTicker(every)
					defer t.Stop()
					for {
						select {
						case <-ctx.Done():
							return
						case <-t.C:
						}
						if cfg.Placed != nil {
							if recs, err := cfg.Placed(ctx); err == nil {
								s.followPlaced(recs)
							} else if ctx.Err() == nil {
								log.Error("tenantwire: reading the tenants' placements failed; keeping the last records", "err", err)
							}
						}
						ids, err := cfg.Suspended(ctx)
						if err != nil {
							if ctx.Err() == nil {
								log.Error("tenantwire: reading the suspended tenants failed; keeping the last set", "err", err)
							}
							continue
						}
						s.follow(ids)
					}
				})
				return nil
			},
			OnStop: func(context.Context) error {
				cancel()
				wg.Wait()
				return nil
			},
		})
		return nil
	}))
}

type suspendedSyncIn struct {
	fx.In
	Lifecycle   fx.Lifecycle
	Suspensions *Suspensions
	Logger      *slog.Logger `optional:"true"`
}

// follow makes the store's set the suspended set, plus the local
// suspensions the store has not listed yet.
func (t *Suspensions) follow(ids []tenancy.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := make(map[tenancy.ID]struct{}, len(ids)+len(t.pinned))
	listed, now := make(map[tenancy.ID]time.Time, len(ids)), time.Now()
	for _, id := range ids {
		next[id] = struct{}{}
		delete(t.pinned, id)
		if at, ok := t.listed[id]; ok {
			listed[id] = at
		} else {
			listed[id] = now
		}
	}
	t.listed = listed
	for id := range t.pinned {
		next[id] = struct{}{}
	}
	t.suspended.Store(&next)
	t.serving.notify(t.Suspended)
}

// awaitReplicasSince waits, for tenants the store lists, until one
// refresh has passed since this replica first read them listed, or since
// recorded (this process's write of their suspension; zero: none),
// whichever is later, as a read may not list a write it raced with:
// every replica reads the store once a refresh, so by then each has read
// the suspension and starts no call of the tenants. A tenant only
// suspended locally (the store does not list it) is not waited for: the
// other replicas cannot know of it.
func (t *Suspensions) awaitReplicasSince(ctx context.Context, recorded time.Time, tenants ...tenancy.ID) error {
	t.mu.Lock()
	at := recorded
	var tenant tenancy.ID
	if len(tenants) > 0 {
		tenant = tenants[0]
	}
	for _, id := range tenants {
		if l, ok := t.listed[id]; ok && l.After(at) {
			at, tenant = l, id
		}
	}
	every := t.refresh
	t.mu.Unlock()
	if at.IsZero() || every <= 0 {
		return nil
	}
	wait := time.Until(at.Add(every + every/4)) // a quarter for the other replicas' reads themselves
	if wait <= 0 {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return &tenancy.Error{
			Code: tenancy.CodeTenantDrainTimeout, Module: "modules", Route: "offboard",
			Detail: fmt.Sprintf("tenant %s: the store listed its suspension %s ago; the other replicas may not have read it yet (they read every %s) when the wait ended (%v); the tenant stays suspended and nothing was removed", tenant, time.Since(at).Round(time.Millisecond), every, ctx.Err()),
			Fix:    "give Offboard a deadline longer than LifecycleConfig.Refresh, or run it again a refresh after recording the suspension",
		}
	}
}
