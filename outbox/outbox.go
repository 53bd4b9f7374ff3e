// Package outbox holds what every outbox relay and every destination share:
// the message a relay forwards and the Destination it forwards to. The
// PostgreSQL and MongoDB outboxes produce Messages; Kafka, Redis streams
// and plain functions consume them.
package outbox

import (
	"context"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Message is one outbox row being forwarded.
type Message struct {
	// Tenant is the row's tenant. The relay binds it into the context it
	// passes to Deliver, so a tenant-aware destination routes per tenant.
	// Zero for a deployment-wide row, delivered under tenancy.WithGlobal.
	Tenant tenancy.ID
	// EventID is unique within its tenant (tenants choose ids freely, so
	// two tenants may use the same one); consumers deduplicate on (Tenant,
	// EventID), delivery being at least once.
	EventID string
	// Topic names the logical stream the row is for; destinations map it
	// to a topic, a stream key or a channel.
	Topic   string
	Key     []byte
	Payload []byte
	Headers map[string]string
}

// Destination receives forwarded rows. Deliver must be idempotent per
// EventID or tolerate duplicates: a relay retries a row until Deliver
// returns nil and the row is marked delivered (or, when configured, gives
// up on it: RelayConfig.DeadLetter). A failed row parks only its tenant.
type Destination interface {
	Deliver(ctx context.Context, m Message) error
}

// DestinationFunc adapts a function to Destination.
type DestinationFunc func(ctx context.Context, m Message) error

// Deliver calls f.
func (f DestinationFunc) Deliver(ctx context.Context, m Message) error { return f(ctx, m) }

// Bind returns the context a relay delivers m under: bound to m's tenant,
// or the explicit tenant-global scope for a deployment-wide row.
func Bind(ctx context.Context, m Message) context.Context {
	if m.Tenant.IsZero() {
		return tenancy.WithGlobal(ctx)
	}
	return tenancy.WithTenant(ctx, m.Tenant)
}
