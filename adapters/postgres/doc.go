// Package postgres is the PostgreSQL backend (pgx v5): typed document
// stores, full-text search, counters, analytics and a confined dynamic
// read, each at the tier its wiring reaches, checked during fx.New.
//
//	postgres.Module("orders",
//		postgres.Connect(dsn),                              // plain; or Pool(p), or Routed(resolve, cfg) → dedicated
//		modules.RequiredIsolation(tenancy.Namespace),
//		postgres.Document[Order]("orders", postgres.DocumentConfig{
//			Read:  naming.PerTenant("orders"), // → namespace
//			Write: naming.PerTenant("orders"),
//		}),
//	)
//
// TenantAware routes stamp and filter a tenant_id column (tagged);
// naming.PerTenant relations are named "<prefix><32 hex>"."table" in every
// statement, never through search_path (namespace); a routed client runs
// each tenant on a pool built from its own credentials (dedicated), through
// the shared routing package. Every tenant-scoped call reads the tenant
// from its context and fails closed with tenant_unbound.
//
// Client.Provision creates a tenant's schema, tables, indexes and confined
// role; Client.Ownership builds an ownership gate over a PostgreSQL lookup.
// Messaging routes (outbox, inbox, idempotency, hub and federated search)
// and their workers (Relay, Sweep; a Tenants set in their config makes them sharded) are described in
// docs/messaging.md.
// A module takes the kit's shared options (modules.RequiredIsolation,
// modules.ConnBudget, modules.AllowTeardown, modules.Placements,
// modules.Migrations, modules.RequiredVersion, modules.TenantRegistry).
// Its migrations are the "<version>_<name>.sql" files at the top of the
// fs.FS, written against unqualified table names. They run in each
// tenant's schema (a route with a per-tenant relation), in each tenant's
// database (a routed client), or once in the static schema (tagged and
// static routes on a plain client), each in one transaction under SET
// LOCAL search_path, so no pooled connection keeps it. A module whose
// routes name per-tenant containers needs a TenantRegistry for its
// RequiredVersion to be checked at start.
//
// Rules states the backend's ceiling and which relations count per kind.
// Nothing connects before the first statement. A module that reaches
// PostgreSQL through PgBouncer in transaction pooling mode says so with
// BehindTransactionPooler (docs/postgres.md).
package postgres
