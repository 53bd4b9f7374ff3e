// Package kafka is the Kafka adapter, on segmentio/kafka-go: producer
// routes to a static or per-tenant topic, consumer-group workers (unbound,
// tenant from headers by explicit opt-in, or sharded per tenant topic),
// idempotent per-tenant topic provisioning, and an outbox destination, on
// a shared client or a routed client per tenant.
//
// Kafka has no tagged tier (a topic has no row filter): a static topic is
// none, a per-tenant topic namespace, a routed client dedicated, and a
// tenant-aware flag is refused at wiring. Module states the wiring to
// enforcement during fx.New; nothing dials before the first call or
// fetch. See docs/kafka.md.
package kafka
