// Package neo4j is tenantwire's Neo4j adapter: a structured graph route
// (nodes and relationships: create, get, update, delete, match by label and
// properties, bounded-depth traversal, transactions), a raw Cypher hatch,
// and per-tenant database provisioning, on neo4j-go-driver v5.
//
// A route is declared GraphRoute(name, RouteConfig{...}) or
// RawCypherRoute(name, RouteConfig{...}), and its tier comes from its
// wiring: RouteConfig.TenantAware stamps a tenant property on every node
// and relationship written and puts the tenant predicate on every node and
// relationship of every pattern the adapter builds, the whole path
// included (tagged); RouteConfig.Database opens each tenant's own database
// on one driver (namespace); Routed gives each tenant its own driver
// (dedicated). Every tenant-scoped call reads the
// tenant from its context and fails closed with tenant_unbound.
//
// Labels, relationship types and property keys are quoted as Cypher
// identifiers (backticks doubled) and never interpolated raw; values are
// always parameters. The raw hatch declares origin raw, so it wires only on
// a routed driver.
//
// # Migrations
//
// modules.Migrations gives a module its "<version>_<name>.cypher" files,
// each holding schema commands separated by ';' (CREATE ... IF NOT
// EXISTS, DROP ... IF EXISTS of constraints and indexes), checked at
// fx.New: a misnamed file, a statement that is not an idempotent schema
// command, or (on a module with tagged routes) a uniqueness constraint
// without the tenant property is wiring_invalid. With
// modules.RequiredVersion, the app refuses to start
// (tenant_migration_behind) while the shared database, or a tenant the
// modules.TenantRegistry lists, is behind it, and a call for a tenant
// whose database records an older version (its TenantwireMigration nodes,
// read once per tenant and database) is refused before its transaction
// opens. A module with per-tenant databases needs a TenantRegistry.
//
// Constructors never connect: fx.New checks the wiring without a server,
// and a driver dials on its first session. See docs/neo4j.md.
package neo4j
