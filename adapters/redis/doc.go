// Package redis is tenantwire's Redis adapter: caches, counters,
// idempotency records, distributed locks, pub/sub, streams with their
// consumer-group worker and trim sweep, and fleet heartbeats, each on a
// go-redis UniversalClient (single node, cluster or sentinel) the service
// already has.
//
// A route is declared with a RouteConfig (a fleet route with a
// FleetConfig), and its tier comes from that wiring: RouteConfig.TenantAware
// puts the tenant in every key (tagged); RouteConfig.Namespace names a key
// namespace per tenant (namespace; streams and pub/sub have none); a routed
// client reaches dedicated. Every tenant-scoped operation reads the tenant
// from its context and fails closed with tenant_unbound. Keys are built by
// one injective encoder (see key.go and docs/redis.md), so no tenant's key
// can ever equal another tenant's key or a shared key.
//
// Constructors never connect: fx.New checks the wiring without a server,
// and the first command or OnStart hook is what dials.
package redis
