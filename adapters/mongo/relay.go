package mongo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Claim fields: MongoDB has no SKIP LOCKED, so a relay leases rows. A row
// whose lease ran out (its relay died) is claimable again: at least once.
const (
	fieldClaim      = "claim"
	fieldLeaseUntil = "lease_until"
	// ClaimLease is how long a claimed row stays out of other relays' reach.
	ClaimLease = time.Minute
)

// Claim implements outbox.Source: it leases up to limit undelivered rows
// to this call. Unbound it reads a tenant-global outbox, the tenants in
// turn (each tenant's rows oldest first); bound (a sharded pass) it reads
// only that tenant's rows, oldest first.
func (o *Outbox) Claim(ctx context.Context, limit int) (outbox.Batch, error) {
	return o.claim(ctx, limit, nil)
}

// ClaimSkipping implements outbox.SkippingSource: Claim, leaving out the
// rows of the tenants in skip (those the relay has parked; the zero ID
// names the deployment-wide rows), so that they never fill a batch ahead
// of other tenants' rows.
func (o *Outbox) ClaimSkipping(ctx context.Context, limit int, skip []tenancy.ID) (outbox.Batch, error) {
	return o.claim(ctx, limit, skip)
}

// skipFilter leaves skip's rows out: $nin also matches a row without a
// tenant field (deployment-wide), which $exists drops when zero is in skip.
func skipFilter(skip []tenancy.ID) bson.E {
	nin := bson.A{}
	cond := bson.D{}
	for _, id := range skip {
		if id.IsZero() {
			cond = append(cond, bson.E{Key: "$exists", Value: true})
			continue
		}
		nin = append(nin, id.String())
	}
	return bson.E{Key: fieldTenant, Value: append(cond, bson.E{Key: "$nin", Value: nin})}
}

func (o *Outbox) claim(ctx context.Context, limit int, skip []tenancy.ID) (outbox.Batch, error) {
	if o.placed != nil {
		// A claim counts as a write: it leases rows it will mark delivered,
		// so a move's fence refuses it (tenant_moving) rather than let it
		// mark rows of the copy being taken.
		return modules.OnPlacement(o.placed, ctx, true, func(in *Outbox) (outbox.Batch, error) { return in.claim(ctx, limit, skip) })
	}
	t, err := o.readTarget(ctx)
	if err != nil {
		return nil, err
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	b := &leaseBatch{o: o, t: t, token: hex.EncodeToString(tok[:]), ids: map[msgKey]string{}}
	now := time.Now()
	free := bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: fieldLeaseUntil, Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: fieldLeaseUntil, Value: bson.D{{Key: "$lt", Value: bson.NewDateTimeFromTime(now)}}}},
	}}
	lease := bson.D{{Key: "$set", Value: bson.D{
		{Key: fieldClaim, Value: b.token},
		{Key: fieldLeaseUntil, Value: bson.NewDateTimeFromTime(now.Add(ClaimLease))},
	}}}
	opts := options.FindOneAndUpdate().
		SetSort(bson.D{{Key: fieldCreated, Value: 1}, {Key: "_id", Value: 1}}).
		SetReturnDocument(options.After)
	base := []bson.E{{Key: fieldDelivered, Value: false}, free}
	_, bound := tenancy.FromContext(ctx)
	if bound {
		skip = nil // a bound claim reads one tenant's rows
	}
	// An unbound claim serves the tenants in turn, so that one tenant's
	// backlog never fills a batch ahead of another tenant's next row: each
	// round takes the oldest free row of every tenant with one, the tenant
	// of the oldest first, leaving out the tenants it took already. A round
	// that found one tenant alone ends the turns: the rest of the batch is
	// that tenant's, in its order.
	fair := !bound
	var round []tenancy.ID
	for len(b.msgs) < limit {
		conds := base
		if out := append(slices.Clip(skip), round...); len(out) > 0 {
			conds = append(slices.Clip(base), skipFilter(out))
		}
		var row outboxRow
		err := t.coll.FindOneAndUpdate(ctx, t.filter(conds...), lease, opts).Decode(&row)
		if errors.Is(err, driver.ErrNoDocuments) {
			if !fair || len(round) == 0 {
				break
			}
			fair = len(round) > 1
			round = round[:0]
			continue
		}
		if err != nil {
			b.Abandon(ctx)
			return nil, fmt.Errorf("mongo: %s claim: %w", o.route.spec.name, err)
		}
		m, err := row.message()
		if err != nil {
			b.Abandon(ctx)
			return nil, fmt.Errorf("mongo: %s: %w", o.route.spec.name, err)
		}
		b.msgs = append(b.msgs, m)
		b.ids[msgKey{m.Tenant, m.EventID}] = row.ID
		if fair {
			round = append(round, m.Tenant)
		}
	}
	return b, nil
}

// leaseBatch is one Claim's rows; it holds the target (and a routed
// client) until Complete or Abandon.
type leaseBatch struct {
	o     *Outbox
	t     target
	token string
	msgs  []outbox.Message
	ids   map[msgKey]string // _id of each leased message
}

// msgKey names an outbox row: event ids are unique per tenant only.
type msgKey struct {
	tenant tenancy.ID
	event  string
}

func (b *leaseBatch) Messages() []outbox.Message { return b.msgs }

// Complete marks the delivered rows and releases the rest of the lease.
// Only rows of this lease are marked; a message it did not lease is
// ignored.
func (b *leaseBatch) Complete(ctx context.Context, delivered []outbox.Message) error {
	defer b.t.release()
	var errs []error
	ids := make(bson.A, 0, len(delivered))
	for _, m := range delivered {
		if id, ok := b.ids[msgKey{m.Tenant, m.EventID}]; ok {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		_, err := b.t.coll.UpdateMany(ctx,
			b.t.filter(bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, bson.E{Key: fieldClaim, Value: b.token}),
			bson.D{
				{Key: "$set", Value: bson.D{{Key: fieldDelivered, Value: true}}},
				{Key: "$unset", Value: bson.D{{Key: fieldClaim, Value: ""}, {Key: fieldLeaseUntil, Value: ""}}},
			})
		if err != nil {
			errs = append(errs, fmt.Errorf("mongo: %s mark delivered: %w", b.o.route.spec.name, err))
		}
	}
	if err := b.unlease(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Abandon releases the lease; an error leaves the rows to their lease's end.
func (b *leaseBatch) Abandon(ctx context.Context) {
	defer b.t.release()
	_ = b.unlease(ctx)
}

func (b *leaseBatch) unlease(ctx context.Context) error {
	if len(b.msgs) == 0 {
		return nil
	}
	_, err := b.t.coll.UpdateMany(ctx, b.t.filter(bson.E{Key: fieldClaim, Value: b.token}),
		bson.D{{Key: "$unset", Value: bson.D{{Key: fieldClaim, Value: ""}, {Key: fieldLeaseUntil, Value: ""}}}})
	if err != nil {
		return fmt.Errorf("mongo: %s release claim: %w", b.o.route.spec.name, err)
	}
	return nil
}

// Relay adds a relay over an outbox route of the module, run from OnStart
// to OnStop by the shared outbox relay. With RelayConfig.Tenants nil it is
// tenant-global: it claims rows unbound and delivers each under its own
// tenant; over a tenant-aware, per-tenant or routed outbox that is refused
// at fx.New with tenant_global_required. With Tenants set it is sharded:
// one bound pass per tenant Tenants returns, read again every
// RelayConfig.Refresh (default 5 s) so that the passes follow the tenant
// set; each pass claims only its tenant's rows. rc's Source is set by the
// option; Name defaults to "<route>-relay".
func Relay(route string, rc outbox.RelayConfig) Option {
	return modules.Own(func(cfg *config) {
		if rc.Name == "" {
			rc.Name = route + "-relay"
		}
		cfg.relays = append(cfg.relays, relaySpec{route: route, cfg: rc})
	})
}

type relaySpec struct {
	route string
	cfg   outbox.RelayConfig
}

// problems are the relay's option errors, reported with the module's.
func (r relaySpec) problems(module string, routes []*routeSpec) []error {
	isOutbox := false
	for _, s := range routes {
		isOutbox = isOutbox || (s.name == r.route && s.kind == kindOutbox)
	}
	if !isOutbox {
		return []error{rules.WiringInvalid(module, r.route,
			fmt.Sprintf("relay %q drains %q, which is not an outbox route of the module", r.cfg.Name, r.route),
			"point the relay at an OutboxRoute of the same module")}
	}
	var errs []error
	if r.cfg.Destination == nil {
		errs = append(errs, rules.WiringInvalid(module, r.route,
			fmt.Sprintf("relay %q has no Destination", r.cfg.Name), "set RelayConfig.Destination"))
	}
	for _, p := range r.cfg.Check("outbox.RelayConfig") {
		errs = append(errs, rules.WiringInvalid(module, r.route, p.Detail, p.Fix))
	}
	return errs
}

// decl is the relay as enforcement sees it.
func (r relaySpec) decl(module string) floors.Worker {
	binding := floors.PerRow
	if r.cfg.Tenants != nil {
		binding = floors.Sharded
	}
	return floors.Worker{Name: r.cfg.Name, Module: module, Route: r.route, Binding: binding}
}

// run starts the relay in OnStart and stops it in OnStop. A relay of one
// placement of a module with placements drains that placement's outbox
// for the tenants placed there (modules.Suspensions.ServeAt).
func (r relaySpec) run(module string, at *modules.Placement) fx.Option {
	return fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, o *Outbox, app *slog.Logger) error {
		cfg := r.cfg
		cfg.Source = o
		if cfg.Logger != nil {
			app = cfg.Logger
		}
		cfg.Logger, cfg.Fence = modules.WorkerLogger(app, rules.Name, module, r.route, cfg.Name), o.route.core.suspensions.Fence()
		if at != nil {
			cfg.Fence = o.route.core.suspensions.ServeAt(*at)
		}
		cfg.WorkerConfig = cfg.WithDefaults()
		relay, err := outbox.NewRelay(cfg)
		if err != nil {
			return err
		}
		lc.Append(fx.Hook{OnStart: relay.Start, OnStop: relay.Stop})
		return nil
	}, fx.ParamTags(``, `name:"`+modules.PlacedName(at, r.route)+`"`, `optional:"true"`)))
}

var _ outbox.SkippingSource = (*Outbox)(nil)
