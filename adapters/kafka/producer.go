package kafka

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Header names the adapter writes. A producer drops any caller-supplied
// header of the same name, so the tenant header is always the adapter's.
const (
	HeaderTenant  = "tenantwire-tenant"
	HeaderEventID = "tenantwire-event-id"
	// HeaderStream carries an outbox message's logical topic.
	HeaderStream = "tenantwire-stream"
)

// route is what producers and sharded readers share: how a tenant picks
// the client and the topic.
type route struct {
	core *core
	spec *routeSpec
	// scoped: calls need a bound tenant.
	scoped bool
	// routed: calls run on the tenant's own client.
	routed bool
	// perTenantTopic: the rules pass the topic resolver the bound tenant.
	perTenantTopic bool
	// tel records each call or record; nil when the app gave no telemetry.
	tel *telemetry.Route
	// entry admits each write (the kit's steps): its reach is the
	// tenant's client, its version gate ensureCurrent.
	entry *modules.Entry[*client]
}

// newRoute applies the rules' decision for the route; nothing here
// re-derives the scope from the route's options.
func newRoute(c *core, spec *routeSpec) route {
	d := rules.Decide(spec.floorsRoute(c.pools != nil))
	r := route{core: c, spec: spec, scoped: d.NeedsTenant, routed: d.Routed, perTenantTopic: d.ResolvesPerTenant(roleTopic),
		tel: c.tel.Route(telemetry.RouteInfo{Backend: rules.Name, Module: c.module, Route: spec.name, Kind: string(spec.kind), Reached: d.Reached, SpanKind: spanKind(spec.kind)})}
	// A static topic of the shared client still writes for the bound
	// tenant, when there is one: its records carry it.
	g := modules.GateOf(modules.GateSpec{Rules: rules, Module: c.module, Route: spec.name, Decision: d,
		Suspensions: c.suspensions, Telemetry: r.tel, TenantOptional: true})
	rr := &route{}
	*rr = r
	r.entry = modules.NewEntry(g, rr.reach, rr.ensureCurrent)
	return r
}

// reach is the entry's step: the tenant's client (the shared one for a
// static topic, or with no tenant bound), which a routed client's release
// returns to its pool.
func (r *route) reach(ctx context.Context, tenant tenancy.ID) (*client, func(), error) {
	c, release, err := r.core.clientFor(ctx, tenant)
	if err != nil {
		return nil, nil, routing.AtRoute(err, r.spec.name)
	}
	if r.core.pools == nil {
		release = nil
	}
	return c, release, nil
}

// topicFor names the route's topic for tenant, validating a resolver's
// output so that a bad name fails closed.
func (r *route) topicFor(tenant tenancy.ID) (string, error) {
	if r.spec.perTenant == nil {
		return r.spec.topic, nil
	}
	if !r.perTenantTopic {
		tenant = tenancy.ID{} // one topic for every tenant, as the rules decide
	}
	t, err := r.spec.perTenant(tenant)
	if errors.Is(err, tenancy.CodeTenantUnbound) {
		return "", r.unbound()
	}
	if err != nil {
		return "", fmt.Errorf("kafka: route %s: topic resolver: %w", r.spec.name, err)
	}
	if r.spec.prefix != "" {
		return t, nil // naming.PerTenant: the prefix was validated at wiring
	}
	if err := validTopic(t); err != nil {
		return "", fmt.Errorf("kafka: route %s: %w", r.spec.name, err)
	}
	return t, nil
}

func (r *route) unbound() error { return rules.Unbound(r.core.module, r.spec.name) }

// Message is one record to produce.
type Message struct {
	Key, Value []byte
	Headers    []kafkago.Header
	// EventID identifies the record for consumers' deduplication; a random
	// one is drawn when empty.
	EventID string
}

// Producer writes to a producer route's topic: the static one, or the
// bound tenant's. It is an outbox.Destination.
type Producer struct{ route }

var _ outbox.Destination = (*Producer)(nil)

// Name is the route's name.
func (p *Producer) Name() string { return p.spec.name }

// TopicFor is the topic the route writes for the tenant bound to ctx.
func (p *Producer) TopicFor(ctx context.Context) (string, error) {
	tenant, err := p.tenant(ctx)
	if err != nil {
		return "", err
	}
	return p.topicFor(tenant)
}

// tenant is the tenant bound to ctx; required on a scoped route, optional
// (zero when unbound) on a static topic of the shared client.
func (p *Producer) tenant(ctx context.Context) (tenancy.ID, error) {
	if id, ok := tenancy.FromContext(ctx); ok {
		return id, p.core.suspensions.Check(id, rules.Name, p.core.module, p.spec.name)
	}
	if p.scoped {
		return tenancy.ID{}, p.unbound()
	}
	return tenancy.ID{}, nil
}

// Produce writes msgs, synchronously, to the route's topic for the tenant
// bound to ctx; a per-tenant topic or routed client with no tenant bound
// fails closed with tenant_unbound. Each record carries the bound tenant
// (when there is one) and an event id in its headers. The write is in
// flight until the broker has answered, so an Offboard deletes the
// tenant's topic only after it.
func (p *Producer) Produce(ctx context.Context, msgs ...Message) error {
	ctx, tenant, c, held, err := p.entry.Open(ctx)
	if err != nil {
		return err
	}
	err = p.produce(ctx, tenant, c, msgs)
	held.End(err)
	return err
}

func (p *Producer) produce(ctx context.Context, tenant tenancy.ID, c *client, msgs []Message) error {
	topic, err := p.topicFor(tenant)
	if err != nil {
		return err
	}
	out := make([]kafkago.Message, len(msgs))
	for i, m := range msgs {
		out[i] = kafkago.Message{Topic: topic, Key: m.Key, Value: m.Value,
			Headers: p.traceHeaders(ctx, stamp(m.Headers, tenant, m.EventID, ""))}
	}
	return p.write(ctx, c, out)
}

// Deliver forwards an outbox message under the context the relay bound:
// the per-tenant topic comes from the bound tenant, never from m. A
// tenant-global row (tenancy.WithGlobal) goes only to a static topic.
// The row's headers hold the trace context of the request that wrote it:
// the delivery links to it, and the record carries the delivery's own,
// so a consumer links to this span in turn.
func (p *Producer) Deliver(ctx context.Context, m outbox.Message) error {
	ctx, tenant, c, held, err := p.entry.OpenLinked(ctx, m.Headers)
	if err != nil {
		return err
	}
	err = p.deliver(ctx, tenant, c, m)
	held.End(err)
	return err
}

func (p *Producer) deliver(ctx context.Context, tenant tenancy.ID, c *client, m outbox.Message) error {
	if !m.Tenant.IsZero() && m.Tenant != tenant {
		return fmt.Errorf("kafka: route %s: message of tenant %s delivered under tenant %q", p.spec.name, m.Tenant, tenant)
	}
	topic, err := p.topicFor(tenant)
	if err != nil {
		return err
	}
	var hs []kafkago.Header
	for k, v := range m.Headers {
		hs = append(hs, kafkago.Header{Key: k, Value: []byte(v)})
	}
	msg := kafkago.Message{Topic: topic, Key: m.Key, Value: m.Payload, Headers: p.traceHeaders(ctx, stamp(hs, tenant, m.EventID, m.Topic))}
	return p.write(ctx, c, []kafkago.Message{msg})
}

// write sends msgs on c, the client the call's entry reached.
func (p *Producer) write(ctx context.Context, c *client, msgs []kafkago.Message) error {
	err := c.writer.WriteMessages(ctx, msgs...)
	if err != nil && isUnknownTopic(err) && len(msgs) > 0 {
		err = p.unknownTopic(ctx, c, msgs, err)
	}
	if err != nil && isLeaderMoving(err) {
		// A topic just created, or a partition whose leader just moved:
		// the transport's metadata names a broker that is not (yet) the
		// leader. Drop it and write again what failed, once.
		c.transport.CloseIdleConnections()
		if shards.Sleep(ctx, nil, 100*time.Millisecond) {
			err = c.writer.WriteMessages(ctx, failedOf(msgs, err)...)
		}
	}
	if err != nil {
		c.recover(err)
		if errors.Is(err, tenancy.CodeTenantNotProvisioned) {
			return err
		}
		return fmt.Errorf("kafka: route %s: %w", p.spec.name, err)
	}
	return nil
}

// unknownTopic handles a write that found its topic unknown. The shared
// transport's metadata may be older than the topic (provisioned by another
// process, or by this one through another module): the brokers are asked,
// once, on this error path only; a topic they serve has the cache dropped
// and the write retried. A topic they do not have is tenant_not_provisioned
// on a route whose topic is the tenant's own; a static topic missing on a
// shared client is a deployment fault and keeps kafka-go's error.
func (p *Producer) unknownTopic(ctx context.Context, c *client, msgs []kafkago.Message, cause error) error {
	topic := msgs[0].Topic
	missing, err := c.missingTopics(ctx, []string{topic})
	if err != nil {
		return cause
	}
	if len(missing) == 0 {
		c.transport.CloseIdleConnections()
		return c.writer.WriteMessages(ctx, msgs...)
	}
	if !p.perTenantTopic && !p.routed {
		return cause
	}
	return notProvisioned(p.core.module, p.spec.name, topic, cause)
}

// stamp returns hs without reserved headers, plus the adapter's own, an
// event id drawn when eventID is empty. The values share one buffer.
func stamp(hs []kafkago.Header, tenant tenancy.ID, eventID, stream string) []kafkago.Header {
	out := make([]kafkago.Header, 0, len(hs)+3)
	for _, h := range hs {
		if h.Key != HeaderTenant && h.Key != HeaderEventID && h.Key != HeaderStream {
			out = append(out, h)
		}
	}
	buf := make([]byte, 0, 36+32+len(eventID)+len(stream))
	if !tenant.IsZero() {
		buf, _ = tenant.AppendText(buf)
		out = append(out, kafkago.Header{Key: HeaderTenant, Value: buf[:36:36]})
	}
	n := len(buf)
	if eventID == "" {
		buf = appendEventID(buf)
	} else {
		buf = append(buf, eventID...)
	}
	out = append(out, kafkago.Header{Key: HeaderEventID, Value: buf[n:len(buf):len(buf)]})
	if stream != "" {
		n = len(buf)
		buf = append(buf, stream...)
		out = append(out, kafkago.Header{Key: HeaderStream, Value: buf[n:]})
	}
	return out
}

// Event ids are a random per-process prefix and a counter: unique without
// a system call per record.
var (
	eventPrefix = func() [8]byte {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic("kafka: no randomness for event ids: " + err.Error())
		}
		return b
	}()
	eventSeq atomic.Uint64
)

func appendEventID(dst []byte) []byte {
	var b [16]byte
	copy(b[:8], eventPrefix[:])
	binary.BigEndian.PutUint64(b[8:], eventSeq.Add(1))
	return hex.AppendEncode(dst, b[:])
}
