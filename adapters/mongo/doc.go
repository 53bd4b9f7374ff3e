// Package mongo is tenantwire's MongoDB adapter: a typed document store,
// a search route, counters, an outbox a relay drains, and a raw filter
// hatch, on the official driver (go.mongodb.org/mongo-driver/v2).
//
// A route's tier comes from its wiring: TenantAware stamps a
// tenant_id field on every write and places it in every filter, update,
// delete and aggregation $match the adapter builds (tagged); a per-tenant
// collection or database on every counted relation names a container per
// tenant (namespace); a routed client opens each tenant's own client from
// its own URI and credentials (dedicated). Every tenant-scoped call reads
// the tenant from its context and fails closed with tenant_unbound.
//
// # Migrations
//
// modules.Migrations gives a module its "<version>_<name>.json" index
// steps, and GoSteps its steps written in Go, checked at fx.New and
// applied by the module's runner. With modules.RequiredVersion, the app
// refuses to start (tenant_migration_behind) while a tenant the
// modules.TenantRegistry lists records a version below it, and a route
// call for a tenant whose own history (tenantwire_migrations in its home
// database) is behind is refused before it reads or writes; the version
// is read once per tenant and server, then remembered. RequiredVersion
// needs Migrations (a version above the newest step is wiring_invalid)
// and a TenantRegistry.
//
// Constructors never connect: fx.New checks the wiring without a server,
// and the driver dials on the first operation.
package mongo
