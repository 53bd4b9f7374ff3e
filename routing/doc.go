// Package routing is the routed-client machinery every backend shares: it
// turns the tenant bound in a context into a client built from that
// tenant's own credentials (the dedicated tier), without ever falling back
// to a shared client.
//
// A backend adapter builds one Pools[C] per routed client, where C is its
// driver handle (*pgxpool.Pool, *redis.Client, *mongo.Client, ...):
//
//	pools, err := routing.New(routing.Config[*redis.Client]{
//		Resolve: resolve, // user-supplied: func(ctx, tenant) (routing.Credentials, error)
//		Open: func(_ context.Context, c routing.Credentials) (*redis.Client, error) {
//			return redis.NewClient(&redis.Options{Addr: c.Endpoint, Username: c.User, Password: c.Secret}), nil
//		},
//		Close:       func(c *redis.Client) { c.Close() },
//		TenantKeyed: true, // every key carries the tenant; others set Targets and Identify
//		Limits:      routing.Limits{MaxClients: 64},
//	})
//
//	client, release, err := pools.Acquire(ctx) // tenant read from ctx
//	if err != nil {
//		return err // tenant_unbound, or the resolver's own error
//	}
//	defer release()
//	// use client for this one operation only
//
// What it guarantees:
//
//   - Fail closed: no tenant bound gives tenancy.Unbound(); a resolver error
//     is returned as is; there is no default client.
//   - One tenant per data target, as the server reports it. Config.Targets
//     names where a credential set's data may live (each host of a list,
//     with its database; each broker), without user or secret, normalised;
//     Config.Identify asks a newly opened client's server who it is (a
//     cluster and database id). The first tenant to reach a target claims
//     it for the process; another tenant whose names meet it is refused
//     with dedicated_target_shared before anything is opened, and one whose
//     server reports a claimed identity is refused, its client closed,
//     before anything of its own is read or written. Claims are
//     process-wide, survive eviction (the data is still there), move only
//     when the tenant's own credentials name a new target, and are released
//     by Close; each costs about 150 bytes a key, kept for every tenant
//     resolved. Replicas do not share them: across processes the resolver
//     must keep tenants apart. A client never serves two tenants.
//   - TenantKeyed instead of Targets, for a client whose every key carries
//     the tenant (Redis): no claims, and tenants whose credentials are
//     identical share one client.
//   - Clients are keyed by a fingerprint, an HMAC-SHA256 of the whole
//     credential set under a per-process random key, so a secret never sits
//     in a map key and fingerprints mean nothing outside the process.
//   - A hard bound: at most MaxClients clients exist at once, counting retired
//     ones until their Close has returned. Opening one more retires the
//     least recently used client and waits for a slot, first come first
//     served, bounded by the context and MaxWait, then fails with
//     connection_budget_exhausted. At most MaxTenants tenant bindings are
//     remembered.
//   - Evict(tenant) forgets a tenant's binding and retires its client when
//     no other tenant still uses it. After TTL a tenant's credentials are
//     resolved again; a changed fingerprint moves the tenant to a new client.
//   - A retired client is closed only after every Acquire on it has been
//     released, so in-flight work drains instead of failing.
//
// Config.Read may stand for Targets and Open, for a backend that would
// otherwise read a credential set twice per new client (PostgreSQL parses
// a DSN): the claims and the client then come from one reading.
//
// Open runs without the lock held but may run concurrently for the same
// fingerprint (the loser is closed), so it must be cheap and must not
// connect: drivers that dial lazily (pgxpool.NewWithConfig, redis.NewClient,
// mongo.Connect, neo4j.NewDriver) fit as they are.
package routing
