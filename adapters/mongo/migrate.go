package mongo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// indexStep is the body of a MongoDB migration file ("0002_by_total.json"):
// indexes created on the tenant's collection of a route, each key a field
// and 1 or -1.
//
//	{"route": "orders", "indexes": [{"name": "by_total", "keys": [{"field": "total", "order": -1}], "unique": false}]}
type indexStep struct {
	Route   string `json:"route"`
	Indexes []struct {
		Name string `json:"name"`
		Keys []struct {
			Field string `json:"field"`
			Order int    `json:"order"`
		} `json:"keys"`
		Unique bool `json:"unique"`
	} `json:"indexes"`
}

// GoStep is a migration written in Go: Run gets the tenant's collection of
// any route of the module. It must be idempotent: MongoDB has no
// transactional DDL, so a step cut off by a crash runs again on the rerun.
type GoStep struct {
	Version int64
	Name    string
	Run     func(ctx context.Context, coll func(route string) (*driver.Collection, error)) error
}

// GoSteps are migrations written in Go, besides the index steps of
// modules.Migrations' "<version>_<name>.json" files; versions are unique
// across both.
func GoSteps(steps ...GoStep) Option {
	return modules.Own(func(c *config) { c.goSteps = append(c.goSteps, steps...) })
}

// migrations is a module's loaded MongoDB migration set.
type migrations struct {
	set migrate.Set
	run map[int64]func(ctx context.Context, coll func(string) (*driver.Collection, error)) error
}

// loadMigrations parses the module's index steps and adds the Go steps;
// versions must be unique across both, and every step must name routes of
// the module.
func loadMigrations(module string, routes []*routeSpec, set migrate.Set, goSteps []GoStep) (*migrations, error) {
	m := &migrations{run: map[int64]func(context.Context, func(string) (*driver.Collection, error)) error{}}
	for _, st := range set {
		var is indexStep
		dec := json.NewDecoder(bytes.NewReader(st.Body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&is); err != nil {
			return nil, fmt.Errorf("mongo: module %s: migration %s: %w", module, st.File(), err)
		}
		if err := checkIndexStep(routes, is); err != nil {
			return nil, fmt.Errorf("mongo: module %s: migration %s: %w", module, st.File(), err)
		}
		m.run[st.Version] = is.apply
	}
	for _, g := range goSteps {
		if g.Version < 1 || g.Name == "" || g.Run == nil {
			return nil, fmt.Errorf("mongo: module %s: Go step %d %q needs a positive version, a name and Run", module, g.Version, g.Name)
		}
		if _, dup := m.run[g.Version]; dup {
			return nil, fmt.Errorf("mongo: module %s: two migrations have version %d", module, g.Version)
		}
		// A Go step's code cannot be hashed: its name stands for it.
		set = append(set, migrate.Step{Version: g.Version, Name: g.Name, Kind: "go", Checksum: "go:" + g.Name})
		m.run[g.Version] = g.Run
	}
	slices.SortFunc(set, func(a, b migrate.Step) int { return cmp.Compare(a.Version, b.Version) })
	m.set = set
	return m, nil
}

func checkIndexStep(routes []*routeSpec, is indexStep) error {
	if !slices.ContainsFunc(routes, func(r *routeSpec) bool { return r.name == is.Route }) {
		return fmt.Errorf("route %q is not a route of the module", is.Route)
	}
	if len(is.Indexes) == 0 {
		return errors.New("no indexes")
	}
	for _, ix := range is.Indexes {
		if ix.Name == "" || len(ix.Keys) == 0 {
			return errors.New("an index needs a name and keys")
		}
		for _, k := range ix.Keys {
			if k.Field == "" || k.Order != 1 && k.Order != -1 {
				return fmt.Errorf("index %s: key %+v: a field and order 1 or -1", ix.Name, k)
			}
		}
	}
	return nil
}

// apply creates the step's indexes; creating an index that exists with
// the same keys is a no-op, so the step is idempotent.
func (is indexStep) apply(ctx context.Context, coll func(string) (*driver.Collection, error)) error {
	c, err := coll(is.Route)
	if err != nil {
		return err
	}
	models := make([]driver.IndexModel, 0, len(is.Indexes))
	for _, ix := range is.Indexes {
		keys := bson.D{}
		for _, k := range ix.Keys {
			keys = append(keys, bson.E{Key: k.Field, Value: k.Order})
		}
		o := options.Index().SetName(ix.Name)
		if ix.Unique {
			o.SetUnique(true)
		}
		models = append(models, driver.IndexModel{Keys: keys, Options: o})
	}
	_, err = c.Indexes().CreateMany(ctx, models)
	return err
}

// home is the route whose tenant database holds a tenant's migration
// records: the first per-tenant route, else the first route.
func (c *core) home(routes []*routeSpec) *routeSpec {
	for _, r := range routes {
		if rt := newRoute(c, r); rt.perTenant || c.pools != nil {
			return r
		}
	}
	return routes[0]
}

// migrationColl is where a tenant's applied steps are recorded: a
// collection in the database of the tenant's first per-tenant route (the
// tenant's own database when routed or database-per-tenant), one document
// per (module, tenant, version).
const migrationColl = "tenantwire_migrations"

// claimTTL is how long an unfinished claim (a migrator that crashed
// mid-step) blocks other migrators before one may take it over.
const claimTTL = 10 * time.Minute

type stepRecord struct {
	ID       string    `bson:"_id"`
	Module   string    `bson:"module"`
	Tenant   string    `bson:"tenant"`
	Version  int64     `bson:"version"`
	Name     string    `bson:"name"`
	Checksum string    `bson:"checksum"`
	State    string    `bson:"state"` // "applying", "applied"
	At       time.Time `bson:"at"`
}

// history is a tenant's migration records, open for one run: the records
// in its home database, and its collections of the routes its steps
// touch, opened as they are first named.
type history struct {
	t       *lifecycleTarget
	tenant  tenancy.ID
	colls   map[string]*driver.Collection
	servers map[string]string
	home    string
	records *driver.Collection
	rec     stepRecord
	release []func()
}

func (t *lifecycleTarget) Open(ctx context.Context, tenant tenancy.ID, _ bool) ([]migrate.History, error) {
	h := &history{t: t, tenant: tenant, colls: map[string]*driver.Collection{}, servers: map[string]string{}, home: t.core.home(t.routes).name}
	hc, err := h.coll(ctx, h.home)
	if err != nil {
		_ = h.Close(ctx, err)
		return nil, err
	}
	h.records = hc.Database().Collection(migrationColl)
	return []migrate.History{h}, nil
}

// coll is the tenant's collection of route name.
func (h *history) coll(ctx context.Context, name string) (*driver.Collection, error) {
	if c, ok := h.colls[name]; ok {
		return c, nil
	}
	i := slices.IndexFunc(h.t.routes, func(r *routeSpec) bool { return r.name == name })
	if i < 0 {
		return nil, fmt.Errorf("mongo: module %s has no route %q", h.t.core.module, name)
	}
	r := newRoute(h.t.core, h.t.routes[i])
	tg, err := h.t.target(ctx, &r, h.tenant)
	if err != nil {
		return nil, err
	}
	h.release = append(h.release, tg.release)
	h.colls[name], h.servers[name] = tg.coll, tg.server
	return tg.coll, nil
}

func (h *history) Key() string { return h.servers[h.home] }

func (h *history) Applied(ctx context.Context) ([]migrate.Applied, error) {
	cur, err := h.records.Find(ctx, bson.D{{Key: "module", Value: h.t.core.module}, {Key: "tenant", Value: h.tenant.Hex()}, {Key: "state", Value: "applied"}})
	if err != nil {
		return nil, err
	}
	var done []stepRecord
	if err := cur.All(ctx, &done); err != nil {
		return nil, err
	}
	applied := make([]migrate.Applied, 0, len(done))
	for _, d := range done {
		applied = append(applied, migrate.Applied{Version: d.Version, Name: d.Name, Checksum: d.Checksum})
	}
	slices.SortFunc(applied, func(a, b migrate.Applied) int { return cmp.Compare(a.Version, b.Version) })
	return applied, nil
}

// Claim inserts the step's record as applying: its _id is (module,
// tenant, version), so two migrators never both run the step.
func (h *history) Claim(ctx context.Context, st migrate.Step) (bool, error) {
	m := h.t.core.module
	h.rec = stepRecord{ID: m + "/" + h.tenant.Hex() + "/" + strconv.FormatInt(st.Version, 10), Module: m,
		Tenant: h.tenant.Hex(), Version: st.Version, Name: st.Name, Checksum: st.Checksum, State: "applying", At: time.Now()}
	return claim(ctx, h.records, h.rec)
}

// Apply runs the step; the claim becomes the record once it finished,
// and is released when it failed.
func (h *history) Apply(ctx context.Context, st migrate.Step) error {
	coll := func(name string) (*driver.Collection, error) { return h.coll(ctx, name) }
	if err := h.t.core.migrations.run[st.Version](ctx, coll); err != nil {
		_, _ = h.records.DeleteOne(context.WithoutCancel(ctx), bson.D{{Key: "_id", Value: h.rec.ID}, {Key: "state", Value: "applying"}})
		return err
	}
	_, err := h.records.UpdateOne(ctx, bson.D{{Key: "_id", Value: h.rec.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: "applied"}, {Key: "at", Value: time.Now()}}}})
	return err
}

// Close: MongoDB has no transactional DDL, so nothing is left to undo.
func (h *history) Close(context.Context, error) error {
	for _, r := range h.release {
		r()
	}
	return nil
}

// claim takes the step for this migrator. It returns false when the step
// was applied by another one, and ErrStepClaimed while another one holds a
// fresh claim; a claim older than claimTTL (its migrator crashed) is taken
// over.
func claim(ctx context.Context, records *driver.Collection, rec stepRecord) (bool, error) {
	_, err := records.InsertOne(ctx, rec)
	if err == nil {
		return true, nil
	}
	if !driver.IsDuplicateKeyError(err) {
		return false, err
	}
	var cur stepRecord
	if err := records.FindOne(ctx, bson.D{{Key: "_id", Value: rec.ID}}).Decode(&cur); err != nil {
		return false, err
	}
	if cur.State == "applied" {
		return false, nil
	}
	if time.Since(cur.At) < claimTTL {
		return false, fmt.Errorf("tenant %s, version %d: %w", rec.Tenant, rec.Version, migrate.ErrStepClaimed)
	}
	res, err := records.UpdateOne(ctx, bson.D{{Key: "_id", Value: rec.ID}, {Key: "state", Value: "applying"}, {Key: "at", Value: cur.At}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: rec.At}}}})
	if err != nil {
		return false, err
	}
	if res.ModifiedCount != 1 {
		return false, fmt.Errorf("tenant %s, version %d: %w", rec.Tenant, rec.Version, migrate.ErrStepClaimed)
	}
	return true, nil
}
