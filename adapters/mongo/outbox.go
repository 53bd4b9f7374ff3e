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
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Outbox row fields besides _id (the event id) and tenant_id.
const (
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
// tenant to its collection resolver (DESIGN §2).
func OutboxRoute(name string, cfg Config) Option {
	return namedRoute(name, KindOutbox, cfg, func(r route) *Outbox { return &Outbox{route: r} })
}

// Outbox stores messages in the same database as the data they describe,
// for a relay to forward later.
type Outbox struct{ route route }

// Add stores m for delivery under the bound tenant (m.Tenant is ignored:
// the row's tenant is the context's), or as a deployment-wide row under
// tenancy.WithGlobal when the outbox is not tenant-scoped. It returns the
// event id, generated when m.EventID is empty.
func (o *Outbox) Add(ctx context.Context, m outbox.Message) (string, error) {
	tenant, bound := tenancy.FromContext(ctx)
	if !bound && (o.route.scoped() || !tenancy.IsGlobal(ctx)) {
		return "", o.route.unbound()
	}
	t, err := o.target(ctx, tenant)
	if err != nil {
		return "", err
	}
	defer t.release()
	if m.EventID == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		m.EventID = hex.EncodeToString(b[:])
	}
	row := bson.D{{Key: "_id", Value: m.EventID}}
	if bound {
		row = append(row, bson.E{Key: fieldTenant, Value: tenant.String()})
	}
	row = append(row,
		bson.E{Key: fieldTopic, Value: m.Topic}, bson.E{Key: fieldKey, Value: m.Key},
		bson.E{Key: fieldPayload, Value: m.Payload}, bson.E{Key: fieldHeaders, Value: m.Headers},
		bson.E{Key: fieldCreated, Value: bson.NewDateTimeFromTime(time.Now())},
		bson.E{Key: fieldDelivered, Value: false})
	if _, err := t.coll.InsertOne(ctx, row); err != nil {
		return "", fmt.Errorf("mongo: %s add: %w", o.route.spec.name, err)
	}
	return m.EventID, nil
}

// target resolves the outbox collection: per tenant and routed outboxes
// need the tenant; a shared one does not.
func (o *Outbox) target(ctx context.Context, tenant tenancy.ID) (target, error) {
	if o.route.core.pools != nil || o.route.perTenant {
		return o.route.targetFor(ctx, tenant)
	}
	t := target{coll: o.route.core.client.Database(o.route.core.db).Collection(o.route.spec.cfg.Collection.name), release: noop}
	if o.route.spec.cfg.TenantAware {
		t.tag = tenant
	}
	return t, nil
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
	Tenant  string            `bson:"tenant_id"`
	Topic   string            `bson:"topic"`
	Key     []byte            `bson:"key"`
	Payload []byte            `bson:"payload"`
	Headers map[string]string `bson:"headers"`
}

// message is the row as the relay forwards it; a row without a tenant is
// deployment-wide.
func (r outboxRow) message() (outbox.Message, error) {
	m := outbox.Message{EventID: r.ID, Topic: r.Topic, Key: r.Key, Payload: r.Payload, Headers: r.Headers}
	if r.Tenant != "" {
		id, err := tenancy.ParseID(r.Tenant)
		if err != nil {
			return outbox.Message{}, fmt.Errorf("row %s: %w", r.ID, err)
		}
		m.Tenant = id
	}
	return m, nil
}

// MarkDelivered marks rows delivered; under a bound tenant of a
// tenant-aware outbox, only that tenant's rows. It returns
// document.ErrNotFound when some id matched no visible row.
func (o *Outbox) MarkDelivered(ctx context.Context, eventIDs ...string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	eventIDs = slices.Compact(slices.Sorted(slices.Values(eventIDs)))
	t, err := o.readTarget(ctx)
	if err != nil {
		return err
	}
	defer t.release()
	res, err := t.coll.UpdateMany(ctx,
		t.filter(bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: eventIDs}}}),
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
