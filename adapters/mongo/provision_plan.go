package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/tenancy"
)

// PlanProvision lists what Provision would create for tenant and the
// server does not have yet, creating nothing: ProvisionAll's dry run.
// Each entry is the object's kind and its name as the server spells it:
// "database <db>" (MongoDB creates a database with its first
// collection), "collection <db>.<coll>", "index <name> on <db>.<coll>".
// Shared collections count too, as Provision creates them with the
// tenant's; on a routed module the tenant's own server is asked.
func (t *lifecycleTarget) PlanProvision(ctx context.Context, tenant tenancy.ID) ([]string, error) {
	if tenant.IsZero() {
		return nil, rules.Unbound(t.core.module, "")
	}
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, spec := range t.routes {
		r := newRoute(t.core, spec)
		tg, err := t.target(ctx, &r, tenant)
		if err != nil {
			return nil, err
		}
		missing, err := missingFor(ctx, tg.coll, spec)
		tg.release()
		if err != nil {
			return nil, fmt.Errorf("mongo: module %s: route %s: planning the provisioning of tenant %s: %w", t.core.module, spec.name, tenant, err)
		}
		for _, m := range missing {
			add(m)
		}
	}
	return out, nil
}

// missingFor is what Provision would create for one route's collection:
// its database, the collection, its indexes, each one the server lacks.
func missingFor(ctx context.Context, coll *driver.Collection, spec *routeSpec) ([]string, error) {
	db := coll.Database()
	ns := db.Name() + "." + coll.Name()
	var idx []string
	for _, m := range provisionIndexes(spec) {
		idx = append(idx, indexName(m))
	}
	onIndexes := func(names []string) []string {
		out := make([]string, 0, len(names))
		for _, n := range names {
			out = append(out, "index "+n+" on "+ns)
		}
		return out
	}
	dbs, err := db.Client().ListDatabaseNames(ctx, bson.D{{Key: "name", Value: db.Name()}})
	if err != nil {
		return nil, err
	}
	if len(dbs) == 0 {
		return append([]string{"database " + db.Name(), "collection " + ns}, onIndexes(idx)...), nil
	}
	colls, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll.Name()}})
	if err != nil {
		return nil, err
	}
	if len(colls) == 0 {
		return append([]string{"collection " + ns}, onIndexes(idx)...), nil
	}
	if len(idx) == 0 {
		return nil, nil
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, s := range specs {
		have[s.Name] = true
	}
	var absent []string
	for _, n := range idx {
		if !have[n] {
			absent = append(absent, n)
		}
	}
	return onIndexes(absent), nil
}

// indexName is the name an index model sets (every index Provision
// creates is named).
func indexName(m driver.IndexModel) string {
	var o options.IndexOptions
	if m.Options != nil {
		for _, f := range m.Options.List() {
			_ = f(&o)
		}
	}
	if o.Name == nil {
		return ""
	}
	return *o.Name
}
