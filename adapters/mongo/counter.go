package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/modules"
)

const fieldCount = "n"

// CounterRoute adds a counter route, provided as *Counter name:"<name>".
func CounterRoute(name string, cfg RouteConfig) Option {
	return placeableRoute(name, kindCounter, cfg, func(r route) *Counter { return &Counter{route: r} },
		func(p *modules.PlacedRoute[*Counter]) *Counter { return &Counter{placed: p} })
}

// Counter holds named atomic integer counters.
type Counter struct {
	route route
	// placed: see Documents.placed.
	placed *modules.PlacedRoute[*Counter]
}

// Add adds delta to the counter and returns its new value; a missing
// counter starts at zero.
func (c *Counter) Add(ctx context.Context, name string, delta int64) (int64, error) {
	if c.placed != nil {
		return modules.OnPlacement(c.placed, ctx, true, func(in *Counter) (int64, error) { return in.Add(ctx, name, delta) })
	}
	ctx, t, err := c.route.target(ctx)
	if err != nil {
		return 0, err
	}
	defer t.release()
	update := bson.D{{Key: "$inc", Value: bson.D{{Key: fieldCount, Value: delta}}}}
	opts := options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)
	for attempt := 0; ; attempt++ {
		raw, err := t.coll.FindOneAndUpdate(ctx, t.byID(name), update, opts).Raw()
		// Two first increments may race to insert; the loser retries as
		// an update.
		if err != nil && driver.IsDuplicateKeyError(err) && attempt == 0 {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("mongo: %s add: %w", c.route.spec.name, err)
		}
		n, ok := raw.Lookup(fieldCount).AsInt64OK()
		if !ok {
			return 0, errors.New("mongo: malformed counter document")
		}
		return n, nil
	}
}

// Get returns the counter's value, zero when it was never set.
func (c *Counter) Get(ctx context.Context, name string) (int64, error) {
	if c.placed != nil {
		return modules.OnPlacement(c.placed, ctx, false, func(in *Counter) (int64, error) { return in.Get(ctx, name) })
	}
	ctx, t, err := c.route.target(ctx)
	if err != nil {
		return 0, err
	}
	defer t.release()
	raw, err := t.coll.FindOne(ctx, t.byID(name)).Raw()
	if errors.Is(err, driver.ErrNoDocuments) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("mongo: %s get: %w", c.route.spec.name, err)
	}
	n, _ := raw.Lookup(fieldCount).AsInt64OK()
	return n, nil
}

// Delete removes the counter and reports whether it existed.
func (c *Counter) Delete(ctx context.Context, name string) (deleted bool, err error) {
	if c.placed != nil {
		return modules.OnPlacement(c.placed, ctx, true, func(in *Counter) (bool, error) { return in.Delete(ctx, name) })
	}
	ctx, t, err := c.route.target(ctx)
	if err != nil {
		return false, err
	}
	defer t.release()
	res, err := t.coll.DeleteOne(ctx, t.byID(name))
	if err != nil {
		return false, fmt.Errorf("mongo: %s delete: %w", c.route.spec.name, err)
	}
	return res.DeletedCount > 0, nil
}
