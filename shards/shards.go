// Package shards runs one shard per tenant of a live tenant set: the
// machinery every sharded worker shares (relays, sweeps, consumers, and
// workers of your own). A shard runs under a context bound to its tenant,
// so everything it reads is that tenant's. The set is read again every
// Refresh, so a tenant provisioned at run time gets its shard within that
// delay, and a tenant that leaves the set (suspended, offboarded) has its
// shard told to stop, without a restart.
package shards

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TenantsFunc returns the tenants a sharded worker serves now. It is read
// at start (an error fails the start) and again every WorkerConfig.Refresh.
type TenantsFunc func(ctx context.Context) ([]tenancy.ID, error)

// DefaultEvery is how often the tenant set is read again by default.
const DefaultEvery = 5 * time.Second

// Config configures a Group: the worker's WorkerConfig (Tenants, read
// again every Refresh; a negative Refresh reads it at start only; Logger
// receives failed re-reads of the set, the shards keeping the last set
// read; Fence registers every shard), its name and its Run.
type Config struct {
	// Name names the worker in errors and logs.
	Name string
	WorkerConfig
	// Run serves one tenant until stop closes or ctx ends. ctx is bound to
	// the tenant and ends when the group stops; stop closes when the
	// tenant left the set: finish what is in flight, then return.
	Run func(ctx context.Context, stop <-chan struct{})
}

// Fence is what a group registers its shards with (*modules.Suspensions
// is one): Serve refuses a suspended tenant, or returns a channel closed
// when the tenant is suspended and the function to run once the shard is
// done.
type Fence interface {
	Serve(tenant tenancy.ID, backend, module, worker string) (stop <-chan struct{}, end func(), err error)
}

// Group is the running shards of one worker.
type Group struct {
	cfg    Config
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	shards map[tenancy.ID]*shard
	// draining are shards told to stop and not done yet: a tenant that
	// comes back waits for its old shard, so it never has two.
	draining map[tenancy.ID]*shard
	// follow ends with the group; it is not a shard.
	follow sync.WaitGroup
}

type shard struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// halt closes stop once: the set dropped the tenant, or it was suspended.
func (s *shard) halt() { s.once.Do(func() { close(s.stop) }) }

// Start reads the set and starts a shard per tenant, then follows the set.
// A tenant listed twice gets one shard; the zero tenant is refused.
func Start(ctx context.Context, cfg Config) (*Group, error) {
	if cfg.Tenants == nil || cfg.Run == nil {
		return nil, fmt.Errorf("shards: %s needs Tenants and Run", cfg.Name)
	}
	cfg.WorkerConfig = cfg.WithDefaults()
	ids, err := cfg.Tenants(ctx)
	if err != nil {
		return nil, fmt.Errorf("shards: %s: tenant set: %w", cfg.Name, err)
	}
	run, cancel := context.WithCancel(context.Background())
	g := &Group{cfg: cfg, cancel: cancel, shards: map[tenancy.ID]*shard{}, draining: map[tenancy.ID]*shard{}}
	if err := g.apply(run, ids); err != nil {
		cancel()
		g.wg.Wait()
		return nil, err
	}
	if cfg.Refresh > 0 {
		g.follow.Add(1)
		go g.followSet(run)
	}
	return g, nil
}

// One runs run alone, under a context not bound to any tenant, until the
// group stops: a worker that is not sharded. stop is nil, as no tenant
// leaves. It starts at once and cannot fail; Stop ends it as it ends
// shards.
func One(run func(ctx context.Context, stop <-chan struct{})) *Group {
	ctx, cancel := context.WithCancel(context.Background())
	g := &Group{cfg: Config{Run: run}, cancel: cancel}
	g.wg.Go(func() { run(ctx, nil) })
	return g
}

// StartWorker starts a worker as its config says: a shard per tenant
// (Start) when cfg.Tenants is set, else one run bound to no tenant (One).
func StartWorker(ctx context.Context, cfg Config) (*Group, error) {
	if cfg.Tenants == nil && cfg.Run != nil {
		return One(cfg.Run), nil
	}
	return Start(ctx, cfg)
}

// apply starts a shard for every tenant of ids without one and stops the
// shards of tenants no longer in it.
func (g *Group) apply(run context.Context, ids []tenancy.ID) error {
	want := make(map[tenancy.ID]bool, len(ids))
	for _, id := range ids {
		if id.IsZero() {
			return fmt.Errorf("shards: %s: the tenant set holds the zero tenant", g.cfg.Name)
		}
		want[id] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, s := range g.shards {
		if !want[id] {
			s.halt()
			delete(g.shards, id)
			g.draining[id] = s
			continue
		}
		select {
		case <-s.done: // stopped by a suspension: a later read may start it again
			delete(g.shards, id)
		default:
		}
	}
	for id, s := range g.draining {
		select {
		case <-s.done:
			delete(g.draining, id)
		default:
		}
	}
	for id := range want {
		if _, ok := g.shards[id]; ok || run.Err() != nil {
			continue
		}
		if _, ok := g.draining[id]; ok {
			continue // started on a later read, once the old shard is done
		}
		fenced, end := (<-chan struct{})(nil), func() {}
		if g.cfg.Fence != nil {
			var err error
			if fenced, end, err = g.cfg.Fence.Serve(id, "shards", g.cfg.Name, g.cfg.Name); err != nil {
				continue // suspended: no shard until it is resumed
			}
		}
		s := &shard{stop: make(chan struct{}), done: make(chan struct{})}
		g.shards[id] = s
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer close(s.done)
			defer end()
			if fenced != nil {
				go func() {
					select {
					case <-fenced:
						s.halt()
					case <-s.done:
					}
				}()
			}
			g.cfg.Run(tenancy.WithTenant(run, id), s.stop)
		}()
	}
	return nil
}

func (g *Group) followSet(run context.Context) {
	defer g.follow.Done()
	t := time.NewTicker(g.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-run.Done():
			return
		case <-t.C:
		}
		ids, err := g.cfg.Tenants(run)
		if err == nil {
			err = g.apply(run, ids)
		}
		if err != nil && run.Err() == nil {
			g.cfg.Logger.Warn("tenantwire: reading the tenant set failed; shards keep the last set", "worker", g.cfg.Name, "error", err)
		}
	}
}

// Tenants is the tenants with a running shard.
func (g *Group) Tenants() []tenancy.ID {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]tenancy.ID, 0, len(g.shards))
	for id := range g.shards {
		out = append(out, id)
	}
	return out
}

// Stop ends every shard: their contexts end, and Stop waits for them, or
// for ctx. A nil group (a worker that never started) stops at once.
func (g *Group) Stop(ctx context.Context) error {
	if g == nil {
		return nil
	}
	g.cancel()
	done := make(chan struct{})
	go func() { g.follow.Wait(); g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tick runs fn now and then every interval until ctx ends or stop closes:
// the loop of a periodic shard (a sweep, a trim). A run in flight
// finishes before Tick returns.
func Tick(ctx context.Context, stop <-chan struct{}, interval time.Duration, fn func(context.Context)) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		fn(ctx)
		t.Reset(interval)
	}
}

// Sleep waits d; false when ctx ended or stop closed first (stop may be
// nil).
func Sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}
