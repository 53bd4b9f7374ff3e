package redis

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// RoutedConfig bounds the per-tenant clients of a routed module and says
// how they are built. Zero values take the defaults.
type RoutedConfig struct {
	// Open builds a client from credentials without connecting; default
	// goredis.NewUniversalClient as described above (a cluster client
	// re-reads its slot map every 2 seconds).
	Open func(routing.Credentials) (goredis.UniversalClient, error)
	// Limits bound the clients; MaxConnsPerClient is each client's pool
	// size (default go-redis's, 10 per GOMAXPROCS).
	routing.Limits
	// ClusterNodes is the most nodes (masters and replicas) of a tenant's
	// cluster. A cluster client keeps a pool of MaxConnsPerClient on every
	// node it talks to, so the worst case ConnBudget checks is MaxClients ×
	// MaxConnsPerClient × ClusterNodes, and the default Open lets a cluster
	// client hold connections on at most ClusterNodes nodes at once (a dial
	// to one more fails with connection_budget_exhausted). Zero: tenants
	// are on single servers; with a ConnBudget the default Open then
	// refuses a cluster endpoint (connection_budget_exceeded).
	ClusterNodes int
}

// Routed runs the module's routes on per-tenant clients (dedicated), built
// from the credentials resolve returns. For the default Open, Endpoint is
// "host:port" (comma-separated addresses for a cluster), User and Secret
// are the ACL user and password, and Params may set "db" (a database
// number) and "master" (a sentinel master). The pooling, the bound,
// re-resolution and the drain before close are the shared routing
// package's. Every route becomes tenant-scoped: fleet routes are refused
// on it, and unbound workers are refused over its streams.
func Routed(resolve routing.Resolver, cfg RoutedConfig) Option {
	return modules.Own(func(c *config) { c.routed, c.sources = &routedConfig{resolve: resolve, RoutedConfig: cfg}, c.sources+1 })
}

type routedConfig struct {
	resolve routing.Resolver
	RoutedConfig
	// module names refusals; budgeted: the module has a ConnBudget.
	module   string
	budgeted bool
}

func (rc *routedConfig) validate(module string) []error {
	errs := modules.CheckRouted(rules, module, "redis.Routed", rc.resolve, rc.Limits)
	if rc.ClusterNodes < 0 {
		errs = append(errs, rules.WiringInvalid(module, "", fmt.Sprintf("RoutedConfig.ClusterNodes %d is negative", rc.ClusterNodes),
			"set redis.RoutedConfig.ClusterNodes to the most nodes of a tenant's cluster, or 0 when tenants are on single servers"))
	}
	return errs
}

// limits are the routed limits with the defaults filled in.
func (rc *routedConfig) limits() routing.Limits {
	return rc.WithDefaults(10 * runtime.GOMAXPROCS(0))
}

// router hands out the tenant's own client.
type router struct {
	pools *routing.Pools[goredis.UniversalClient]
}

func newRouter(module string, rc *routedConfig) (*router, error) {
	open := rc.Open
	if open == nil {
		open = rc.defaultOpen
	}
	pools, err := routing.New(routing.Config[goredis.UniversalClient]{
		Resolve: rc.resolve,
		Open: func(_ context.Context, c routing.Credentials) (goredis.UniversalClient, error) {
			return open(c)
		},
		Close: func(c goredis.UniversalClient) { _ = c.Close() },
		// Every key and channel of a routed module carries the tenant
		// (tw:d:<hex>:...), so tenants on one server, even on one client,
		// never meet: no target claims. What dedicated adds on Redis is
		// the tenant's own credentials, which an ACL can confine to its
		// keys.
		TenantKeyed: true,
		Module:      module,
		Backend:     rules.Name,
		Limits:      rc.Limits,
	})
	if err != nil {
		return nil, fmt.Errorf("redis module %s: %w", module, err)
	}
	return &router{pools: pools}, nil
}

func (rc *routedConfig) defaultOpen(c routing.Credentials) (goredis.UniversalClient, error) {
	opts := &goredis.UniversalOptions{
		Addrs: strings.Split(c.Endpoint, ","), Username: c.User, Password: c.Secret,
		PoolSize: rc.MaxConnsPerClient, MasterName: c.Params["master"],
	}
	if db := c.Params["db"]; db != "" {
		n, err := strconv.Atoi(db)
		if err != nil {
			return nil, fmt.Errorf("redis: credential param db=%q is not a number", db)
		}
		opts.DB = n
	}
	if err := rc.guardCluster(opts); err != nil {
		return nil, err
	}
	return newClient(opts), nil
}

func (r *router) client(ctx context.Context, id tenancy.ID) (goredis.UniversalClient, func(), error) {
	return r.pools.AcquireFor(ctx, id)
}

// close retires every client once its in-flight calls (and open
// subscriptions) are done, or gives up when ctx ends.
func (r *router) close(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		r.pools.Close()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("redis: routed clients still in use at stop: %w", ctx.Err())
	}
}
