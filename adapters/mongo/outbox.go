package mongo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Outbox row fields besides _id (rowID) and tenant_id.
const (
	fieldEvent     = "event_id"
	fieldTopic     = "topic"
	fieldKey       = "key"
	fieldPayload   = "payload"
	fieldHeaders   = "headers"
	fieldCreated   = "created"
	fieldDelivered = "delivered"
)

// OutboxRoute adds an outbox route, provided as *Outbox name:"<name>".
// Rows always carry their tenant (for the relay to bind); a tenant-aware
// outbox also filters on it, and only a tenant-aware outbox passes the
// tenant to its collection resolver (the outbox rule of mongo.Rules).
func OutboxRoute(name string, cfg RouteConfig) Option {
	return placeableRoute(name, kindOutbox, cfg, func(r route) *Outbox { return &Outbox{route: r} },
		func(p *modules.PlacedRoute[*Outbox]) *Outbox { return &Outbox{placed: p} })
}

// Outbox stores messages in the same database as the data they describe,
// for a relay to forward later.
type Outbox struct {
	route route
	// placed: see Documents.placed. The module's relays drain each
	// placement's outbox with the relay of that placement.
	placed *modules.PlacedRoute[*Outbox]
}

// Write stores msgs for delivery under the bound tenant (m.Tenant is
// ignored: the row's tenant is the context's), or as deployment-wide rows
// under tenancy.WithGlobal when the outbox is not tenant-scoped. An empty
// EventID gets a random one. The rows are inserted in order, each on its
// own: a failing row (an event id already written) stops the write and
// leaves the rows before it written.
//
// The write is one route call (a span from its entry until the collection
// is given back, its refusals recorded), and each row carries that call's
// trace context, for the relay's delivery to link to.
func (o *Outbox) Write(ctx context.Context, msgs ...outbox.Message) error {
	if o.placed != nil {
		_, err := modules.OnPlacement(o.placed, ctx, true, func(in *Outbox) (struct{}, error) { return struct{}{}, in.Write(ctx, msgs...) })
		return err
	}
	var call *telemetry.Call
	if o.route.tel != nil {
		id, _ := tenancy.FromContext(ctx)
		ctx, call = o.route.tel.Start(ctx, id)
	}
	tenant, t, err := o.enterWrite(ctx)
	if err != nil {
		return call.Fail(err)
	}
	defer call.Done(t.release)()
	bound := !tenant.IsZero()
	for _, m := range msgs {
		if m.EventID == "" {
			var b [16]byte
			_, _ = rand.Read(b[:])
			m.EventID = hex.EncodeToString(b[:])
		}
		// The write's trace context rides in the row for the relay's
		// delivery to link to.
		m.Headers = o.route.core.tel.Inject(ctx, m.Headers)
		row := bson.D{{Key: "_id", Value: rowID(tenant, m.EventID)}, {Key: fieldEvent, Value: m.EventID}}
		if bound {
			row = append(row, bson.E{Key: fieldTenant, Value: tenant.String()})
		}
		row = append(row,
			bson.E{Key: fieldTopic, Value: m.Topic}, bson.E{Key: fieldKey, Value: m.Key},
			bson.E{Key: fieldPayload, Value: m.Payload}, bson.E{Key: fieldHeaders, Value: m.Headers},
			bson.E{Key: fieldCreated, Value: bson.NewDateTimeFromTime(time.Now())},
			bson.E{Key: fieldDelivered, Value: false})
		if _, err := t.coll.InsertOne(ctx, row); err != nil {
			return fmt.Errorf("mongo: %s write: %w", o.route.spec.name, err)
		}
	}
	return nil
}

// enterWrite resolves a write's row tenant and collection, the tenant's
// version checked; the caller releases the target when err is nil.
func (o *Outbox) enterWrite(ctx context.Context) (tenancy.ID, target, error) {
	tenant, err := o.rowTenant(ctx)
	if err != nil {
		return tenant, target{}, err
	}
	t, err := o.target(ctx, tenant)
	if err != nil {
		return tenant, target{}, err
	}
	if !tenant.IsZero() {
		if err := o.route.ensureCurrent(ctx, tenant, t); err != nil {
			t.release()
			return tenant, target{}, err
		}
	}
	return tenant, t, nil
}

// rowID is a row's _id: the row tenant's 32 hex digits (zeros for a
// deployment-wide row), a colon, the event id. The fixed-width prefix makes
// it injective, so event ids are unique per tenant: two tenants may use the
// same one, and neither can take it first or learn that the other did.
func rowID(tenant tenancy.ID, eventID string) string {
	return tenant.Hex() + ":" + eventID
}

// rowTenant is the tenant a row written or acknowledged under ctx carries:
// the bound one, or none under the explicit tenant-global scope of an
// outbox that is not tenant-scoped. Anything else fails closed.
func (o *Outbox) rowTenant(ctx context.Context) (tenancy.ID, error) {
	if tenant, bound := tenancy.FromContext(ctx); bound {
		return tenant, nil
	}
	if !o.route.scoped() && tenancy.IsGlobal(ctx) {
		return tenancy.ID{}, nil
	}
	return tenancy.ID{}, o.route.unbound()
}

// target resolves the outbox collection: per tenant and routed outboxes
// need the tenant; a shared one does not. Rows always carry their tenant,
// so a call for a tenant filters on it even when the outbox is not
// tenant-aware: a bound reader of a tenant-global outbox (a sharded relay,
// Pending) sees only its tenant's rows. The zero tenant filters nothing.
func (o *Outbox) target(ctx context.Context, tenant tenancy.ID) (target, error) {
	end := noop
	if !tenant.IsZero() {
		// In flight (Suspensions.Enter) until the target is released.
		var err error
		if end, err = o.route.core.suspensions.Enter(tenant, rules.Name, o.route.core.module, o.route.spec.name); err != nil {
			return target{}, err
		}
	}
	if o.route.decision.Routed || o.route.perTenant {
		t, err := o.route.targetFor(ctx, tenant)
		if err != nil {
			end()
			return t, err
		}
		t.tag = tenant
		t.release = o.route.withEnd(t.release, end)
		return t, nil
	}
	return target{coll: o.route.core.client.Database(o.route.core.db).Collection(o.route.spec.coll.name),
		release: end, tag: tenant}, nil
}

// readTarget is where the relay reads: with a tenant bound, that tenant's
// rows (a sharded relay); on a tenant-global outbox, every row (a per-row
// relay, which binds each row's tenant). A tenant-scoped outbox read with
// no tenant bound, or in the tenant-global scope, fails closed.
func (o *Outbox) readTarget(ctx context.Context) (target, error) {
	if tenant, bound := tenancy.FromContext(ctx); bound {
		return o.target(ctx, tenant)
	}
	if !o.route.scoped() {
		return o.target(ctx, tenancy.ID{})
	}
	return target{}, o.route.unbound()
}

// Pending returns up to limit undelivered rows, oldest first.
func (o *Outbox) Pending(ctx context.Context, limit int) ([]outbox.Message, error) {
	if o.placed != nil {
		return modules.OnPlacement(o.placed, ctx, false, func(in *Outbox) ([]outbox.Message, error) { return in.Pending(ctx, limit) })
	}
	t, err := o.readTarget(ctx)
	if err != nil {
		return nil, err
	}
	defer t.release()
	opts := options.Find().SetSort(bson.D{{Key: fieldCreated, Value: 1}, {Key: "_id", Value: 1}})
	if limit > 0 {
		opts.SetLimit(int64(limit))
	}
	cur, err := t.coll.Find(ctx, t.filter(bson.E{Key: fieldDelivered, Value: false}), opts)
	if err != nil {
		return nil, fmt.Errorf("mongo: %s pending: %w", o.route.spec.name, err)
	}
	defer cur.Close(ctx)
	var out []outbox.Message
	for cur.Next(ctx) {
		var row outboxRow
		if err := cur.Decode(&row); err != nil {
			return nil, fmt.Errorf("mongo: %s pending: %w", o.route.spec.name, err)
		}
		m, err := row.message()
		if err != nil {
			return nil, fmt.Errorf("mongo: %s: %w", o.route.spec.name, err)
		}
		out = append(out, m)
	}
	return out, cur.Err()
}

// outboxRow is a stored row as the driver decodes it.
type outboxRow struct {
	ID      string            `bson:"_id"`
	EventID string            `bson:"event_id"`
	Tenant  string            `bson:"tenant_id"`
	Topic   string            `bson:"topic"`
	Key     []byte            `bson:"key"`
	Payload []byte            `bson:"payload"`
	Headers map[string]string `bson:"headers"`
}

// message is the row as the relay forwards it; a row without a tenant is
// deployment-wide. A row written before event ids were scoped per tenant
// has no event_id field: its _id is the event id.
func (r outboxRow) message() (outbox.Message, error) {
	m := outbox.Message{EventID: r.EventID, Topic: r.Topic, Key: r.Key, Payload: r.Payload, Headers: r.Headers}
	if r.EventID == "" {
		m.EventID = r.ID
	}
	if r.Tenant != "" {
		id, err := tenancy.ParseID(r.Tenant)
		if err != nil {
			return outbox.Message{}, fmt.Errorf("row %s: %w", r.ID, err)
		}
		m.Tenant = id
	}
	return m, nil
}

// MarkDelivered marks the rows of the given event ids delivered: the bound
// tenant's, or the deployment-wide ones under tenancy.WithGlobal on an
// outbox that is not tenant-scoped (an event id names a row only with its
// tenant). It returns document.ErrNotFound when some id matched no such
// row. A row from Pending is acknowledged under outbox.Bind(ctx, m).
func (o *Outbox) MarkDelivered(ctx context.Context, eventIDs ...string) error {
	if o.placed != nil {
		_, err := modules.OnPlacement(o.placed, ctx, true, func(in *Outbox) (struct{}, error) { return struct{}{}, in.MarkDelivered(ctx, eventIDs...) })
		return err
	}
	if len(eventIDs) == 0 {
		return nil
	}
	tenant, err := o.rowTenant(ctx)
	if err != nil {
		return err
	}
	eventIDs = slices.Compact(slices.Sorted(slices.Values(eventIDs)))
	t, err := o.target(ctx, tenant)
	if err != nil {
		return err
	}
	defer t.release()
	ids := make(bson.A, len(eventIDs))
	for i, ev := range eventIDs {
		ids[i] = rowID(tenant, ev)
	}
	// A row written before event ids were scoped has the event id as _id
	// and no event_id: it matches only with its own tenant stamp.
	var owner any = bson.D{{Key: "$exists", Value: false}}
	if !tenant.IsZero() {
		owner = tenant.String()
	}
	legacy := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: eventIDs}}},
		{Key: fieldEvent, Value: bson.D{{Key: "$exists", Value: false}}}, {Key: fieldTenant, Value: owner}}
	res, err := t.coll.UpdateMany(ctx,
		t.filter(bson.E{Key: "$or", Value: bson.A{bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}, legacy}}),
		bson.D{{Key: "$set", Value: bson.D{{Key: fieldDelivered, Value: true}}}})
	if err != nil {
		return fmt.Errorf("mongo: %s mark delivered: %w", o.route.spec.name, err)
	}
	if res.MatchedCount < int64(len(eventIDs)) {
		return document.ErrNotFound
	}
	return nil
}

func outboxIndexes(r *routeSpec) []driver.IndexModel {
	keys := bson.D{}
	if r.cfg.TenantAware {
		keys = append(keys, bson.E{Key: fieldTenant, Value: 1})
	}
	keys = append(keys, bson.E{Key: fieldDelivered, Value: 1}, bson.E{Key: fieldCreated, Value: 1})
	return []driver.IndexModel{{Keys: keys, Options: options.Index().SetName(r.name + "_pending")}}
}
