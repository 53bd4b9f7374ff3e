package mongo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// IndexStep is the body of a MongoDB migration file ("0002_by_total.json"):
// indexes created on the tenant's collection of a route.
//
//	{"route": "orders", "indexes": [{"name": "by_total", "keys": [{"field": "total", "order": -1}], "unique": false}]}
type IndexStep struct {
	Route   string      `json:"route"`
	Indexes []IndexSpec `json:"indexes"`
}

// IndexSpec is one index of an IndexStep.
type IndexSpec struct {
	Name   string     `json:"name"`
	Keys   []IndexKey `json:"keys"`
	Unique bool       `json:"unique"`
}

// IndexKey is one key of an index: a field and 1 or -1.
type IndexKey struct {
	Field string `json:"field"`
	Order int    `json:"order"`
}

// GoStep is a migration written in Go: Run gets the tenant's collection of
// any route of the module. It must be idempotent: MongoDB has no
// transactional DDL, so a step cut off by a crash runs again on the rerun.
type GoStep struct {
	Version int64
	Name    string
	Run     func(ctx context.Context, coll func(route string) (*driver.Collection, error)) error
}

// Migrations is a module's loaded MongoDB migration set.
type Migrations struct {
	set migrate.Set
	run map[int64]func(ctx context.Context, coll func(string) (*driver.Collection, error)) error
}

// Set is the ordered steps.
func (m *Migrations) Set() migrate.Set { return m.set }

// LoadMigrations reads "<version>_<name>.json" index steps from fsys (nil:
// none) and adds the Go steps; versions must be unique across both, and
// every step must name routes of the module.
func (p *Provisioner) LoadMigrations(fsys fs.FS, goSteps ...GoStep) (*Migrations, error) {
	return loadMigrations(p.core.module, p.routes, fsys, goSteps)
}

func loadMigrations(module string, routes []*routeSpec, fsys fs.FS, goSteps []GoStep) (*Migrations, error) {
	var set migrate.Set
	if fsys != nil {
		var err error
		if set, err = migrate.Load(fsys, "json"); err != nil {
			return nil, err
		}
	}
	m := &Migrations{run: map[int64]func(context.Context, func(string) (*driver.Collection, error)) error{}}
	for _, st := range set {
		var is IndexStep
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

func checkIndexStep(routes []*routeSpec, is IndexStep) error {
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
func (is IndexStep) apply(ctx context.Context, coll func(string) (*driver.Collection, error)) error {
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

// Migrate applies m's pending steps to tenant (dry: lists them). Each step
// is claimed first (a document whose _id is (module, tenant, version)), so
// two migrators never both run it; the claim becomes the record once the
// step finished, and is released when it failed.
func (p *Provisioner) Migrate(ctx context.Context, tenant tenancy.ID, m *Migrations, dry bool) ([]migrate.Change, error) {
	if tenant.IsZero() {
		return nil, tenancy.Unbound()
	}
	colls, servers := map[string]*driver.Collection{}, map[string]string{}
	var releases []func()
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	coll := func(name string) (*driver.Collection, error) {
		if c, ok := colls[name]; ok {
			return c, nil
		}
		i := slices.IndexFunc(p.routes, func(r *routeSpec) bool { return r.name == name })
		if i < 0 {
			return nil, fmt.Errorf("mongo: module %s has no route %q", p.core.module, name)
		}
		r := newRoute(p.core, p.routes[i])
		t, err := p.target(ctx, &r, tenant)
		if err != nil {
			return nil, err
		}
		releases = append(releases, t.release)
		colls[name], servers[name] = t.coll, t.server
		return t.coll, nil
	}
	home := p.core.home(p.routes)
	hc, err := coll(home.name)
	if err != nil {
		return nil, err
	}
	records := hc.Database().Collection(migrationColl)
	cur, err := records.Find(ctx, bson.D{{Key: "module", Value: p.core.module}, {Key: "tenant", Value: tenant.Hex()}, {Key: "state", Value: "applied"}})
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
	pending, err := m.set.Pending(applied, p.core.module, rules.Name, tenant)
	if err != nil {
		return nil, err
	}
	var changes []migrate.Change
	for _, st := range pending {
		ch := migrate.Change{Tenant: tenant, Module: p.core.module, Version: st.Version, Name: st.Name}
		if dry {
			changes = append(changes, ch)
			continue
		}
		rec := stepRecord{ID: p.core.module + "/" + tenant.Hex() + "/" + strconv.FormatInt(st.Version, 10), Module: p.core.module,
			Tenant: tenant.Hex(), Version: st.Version, Name: st.Name, Checksum: st.Checksum, State: "applying", At: time.Now()}
		mine, err := claim(ctx, records, rec)
		if err != nil {
			return changes, err
		}
		if !mine { // another migrator applied it meanwhile
			continue
		}
		if err := m.run[st.Version](ctx, coll); err != nil {
			_, _ = records.DeleteOne(context.WithoutCancel(ctx), bson.D{{Key: "_id", Value: rec.ID}, {Key: "state", Value: "applying"}})
			return changes, fmt.Errorf("mongo: module %s: migration %s failed for tenant %s: %w", p.core.module, st.File(), tenant, err)
		}
		if _, err := records.UpdateOne(ctx, bson.D{{Key: "_id", Value: rec.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: "applied"}, {Key: "at", Value: time.Now()}}}}); err != nil {
			return changes, err
		}
		changes = append(changes, ch)
	}
	if !dry {
		p.core.gate.Mark(tenant, servers[home.name], m.set.Latest())
	}
	return changes, nil
}

// ErrStepClaimed: another migrator is applying the step now; the tenant
// is reported failed for this run and a rerun completes it.
var ErrStepClaimed = errors.New("another migrator is applying this step; rerun once it finished")

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
		return false, fmt.Errorf("tenant %s, version %d: %w", rec.Tenant, rec.Version, ErrStepClaimed)
	}
	res, err := records.UpdateOne(ctx, bson.D{{Key: "_id", Value: rec.ID}, {Key: "state", Value: "applying"}, {Key: "at", Value: cur.At}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: rec.At}}}})
	if err != nil {
		return false, err
	}
	if res.ModifiedCount != 1 {
		return false, fmt.Errorf("tenant %s, version %d: %w", rec.Tenant, rec.Version, ErrStepClaimed)
	}
	return true, nil
}

// MigrateAll migrates every tenant (tenants, or reg's ready tenants when
// nil) with bounded concurrency, recording each tenant's version in reg.
func (p *Provisioner) MigrateAll(ctx context.Context, tenants []tenancy.ID, m *Migrations, reg migrate.Registry, o migrate.Options) (migrate.Report, error) {
	if tenants == nil {
		if reg == nil {
			return migrate.Report{}, fmt.Errorf("mongo: module %s: MigrateAll without a tenant list needs a registry", p.core.module)
		}
		var err error
		if tenants, err = migrate.ReadyTenants(ctx, reg); err != nil {
			return migrate.Report{}, err
		}
	}
	return migrate.Each(ctx, "migrate "+p.core.module, tenants, o, func(ctx context.Context, t tenancy.ID, rec *migrate.Recorder) error {
		ch, err := p.Migrate(ctx, t, m, o.DryRun)
		rec.Add(ch...)
		if err != nil || reg == nil || o.DryRun {
			return err
		}
		return reg.SetVersion(ctx, t, p.core.module, m.set.Latest())
	}), nil
}

// ProvisionAll provisions tenants with bounded concurrency, recording each
// in reg when given; Provision is idempotent, so a rerun after a crash
// completes the rest.
func (p *Provisioner) ProvisionAll(ctx context.Context, tenants []tenancy.ID, reg migrate.Registry, o migrate.Options) migrate.Report {
	return migrate.Each(ctx, "provision "+p.core.module, tenants, o, func(ctx context.Context, t tenancy.ID, _ *migrate.Recorder) error {
		if reg != nil {
			if err := reg.Put(ctx, t, migrate.Provisioning); err != nil {
				return err
			}
		}
		if err := p.Provision(ctx, t); err != nil {
			return err
		}
		if reg != nil {
			return reg.Put(ctx, t, migrate.Ready)
		}
		return nil
	})
}
