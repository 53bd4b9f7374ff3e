// Package kafka is the Kafka adapter, on segmentio/kafka-go: producer
// routes to a static or per-tenant topic, consumer-group workers (unbound,
// tenant from headers by explicit opt-in, or sharded per tenant topic),
// idempotent per-tenant topic provisioning, and an outbox destination, on
// a shared client or a routed client per tenant.
//
// # Migrations
//
// modules.Migrations gives a module its topic-configuration steps
// ("<version>_<name>.json": {"routes": [...], "configs":
// {"retention.ms": "86400000", "cleanup.policy": null}}), set on the
// tenant's topics of the named routes (every per-tenant route when none;
// null deletes a setting), checked at fx.New and applied by the module's
// runner. Kafka keeps no migration history, so with
// modules.RequiredVersion a tenant's version is read from its topics
// themselves (the newest step whose settings they all carry, read once
// per tenant and cluster with DescribeConfigs): the app refuses to start
// while a tenant the modules.TenantRegistry lists records a version below
// it, and a Produce or Deliver for a tenant whose topics are behind is
// refused before it writes. RequiredVersion needs Migrations, a
// TenantRegistry and a route with per-tenant topics (or a routed client).
//
// Kafka has no tagged tier (a topic has no row filter): a static topic is
// none, a per-tenant topic namespace, a routed client dedicated, and a
// tenant-aware flag is refused at wiring. Module states the wiring to
// enforcement during fx.New; nothing dials before the first call or
// fetch. See docs/kafka.md.
package kafka
