package mongo

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// An archived document is its route's, family "documents", its value
// canonical Extended JSON (every BSON type kept) without the tenant
// field and, when its _id carries the tenant's prefix ("<hex>:<id>", a
// tagged route's documents), with the prefix cut and Meta "id" =
// "tenant"; an import stamps the target tenant's field and prefix.

// archiveColl is one collection of a tenant's documents: the route's
// per-tenant collection or its collection in a routed tenant's own
// database (all of it), or its shared one (filter: the tenant's
// documents).
type archiveColl struct {
	route  string
	coll   *driver.Collection
	filter bson.D
	tagged bool
	done   func()
}

// archiveColls lists tenant's collections, route by route, each once;
// out, when set, is told the tiers and the tenant-global routes.
func (p *lifecycleTarget) archiveColls(ctx context.Context, tenant tenancy.ID, out migrate.ArchiveOut) ([]archiveColl, error) {
	var colls []archiveColl
	seen := map[string]bool{}
	for _, spec := range p.routes {
		r := newRoute(p.core, spec)
		if out != nil {
			out.Tier(spec.name, r.decision.Reached)
		}
		// A routed route's collection is in the tenant's own database:
		// all of it is the tenant's, as teardown and the verifier count it.
		if !r.perTenant && !r.decision.Tagged && !r.decision.Routed {
			if out != nil {
				out.Skip(spec.name, "tenant-global: its documents are no tenant's")
			}
			continue
		}
		t, err := r.targetFor(ctx, tenant)
		if err != nil {
			releaseAll(colls)
			return nil, err
		}
		key := t.server + "|" + t.coll.Database().Name() + "." + t.coll.Name()
		if seen[key] {
			t.release()
			continue
		}
		seen[key] = true
		c := archiveColl{route: spec.name, coll: t.coll, filter: bson.D{}, tagged: r.decision.Tagged, done: t.release}
		if r.decision.Tagged {
			c.filter = bson.D{{Key: fieldTenant, Value: tenant.String()}}
		}
		colls = append(colls, c)
	}
	return colls, nil
}

func releaseAll(colls []archiveColl) {
	for _, c := range colls {
		c.done()
	}
}

// Export writes tenant's documents of every route, by _id. It is no
// snapshot across collections: FerretDB and a standalone server have no
// snapshot reads, so each collection is read by one cursor as it goes.
func (p *lifecycleTarget) Export(ctx context.Context, tenant tenancy.ID, out migrate.ArchiveOut) error {
	out.Snapshot("none: one cursor per collection, no snapshot read across them")
	colls, err := p.archiveColls(ctx, tenant, out)
	if err != nil {
		return err
	}
	defer releaseAll(colls)
	for _, c := range colls {
		cur, err := c.coll.Find(ctx, c.filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			return fmt.Errorf("mongo: exporting %s: %w", c.route, err)
		}
		for cur.Next(ctx) {
			var doc bson.D
			if err := cur.Decode(&doc); err != nil {
				cur.Close(ctx)
				return err
			}
			var meta map[string]string
			if c.tagged {
				doc = withoutField(doc, fieldTenant)
				if id, ok := doc[0].Value.(string); ok && doc[0].Key == "_id" && strings.HasPrefix(id, tenant.Hex()+":") {
					doc[0].Value, meta = strings.TrimPrefix(id, tenant.Hex()+":"), map[string]string{"id": "tenant"}
				}
			}
			v, err := bson.MarshalExtJSON(doc, true, false)
			if err != nil {
				cur.Close(ctx)
				return fmt.Errorf("mongo: exporting %s: %w", c.route, err)
			}
			if err := out.Emit(migrate.Record{Route: c.route, Family: "documents", Kind: "document", Value: v, Meta: meta}); err != nil {
				cur.Close(ctx)
				return err
			}
		}
		err = cur.Err()
		cur.Close(ctx)
		if err != nil {
			return fmt.Errorf("mongo: exporting %s: %w", c.route, err)
		}
	}
	return nil
}

func withoutField(doc bson.D, name string) bson.D {
	out := doc[:0:0]
	for _, e := range doc {
		if e.Key != name {
			out = append(out, e)
		}
	}
	return out
}

// importBatchDocs bounds one InsertMany.
const importBatchDocs = 500

// Import inserts an archive's documents into tenant's collections, which
// must hold none of the tenant's: each document gets the target tenant's
// field (an edited archive's own is dropped). Inserts are not one
// transaction: an interrupted import is rerun after Tenants.Offboard and
// Provision of the target (docs/archive.md).
func (p *lifecycleTarget) Import(ctx context.Context, tenant tenancy.ID, in migrate.ArchiveIn) error {
	colls, err := p.archiveColls(ctx, tenant, nil)
	if err != nil {
		return err
	}
	defer releaseAll(colls)
	byRoute := map[string]archiveColl{}
	for _, c := range colls {
		byRoute[c.route] = c
		n, err := c.coll.CountDocuments(ctx, c.filter, options.Count().SetLimit(1))
		if err != nil {
			return err
		}
		if n > 0 {
			return migrate.ArchiveTargetNotEmpty(p.core.module, rules.Name, tenant, c.coll.Database().Name()+"."+c.coll.Name())
		}
	}
	for _, sec := range in.Sections() {
		if _, ok := byRoute[sec.Route]; !ok || sec.Family != "documents" {
			return migrate.ArchiveMismatch(p.core.module, rules.Name, sec.Route, fmt.Sprintf("the archive holds family %q of route %q: the module has no such tenant-scoped route", sec.Family, sec.Route),
				"import an unaltered archive into an app with the archive's routes")
		}
	}
	var cur *archiveColl
	var batch []any
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := cur.coll.InsertMany(ctx, batch)
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("mongo: importing into %s: %w", cur.route, err)
		}
		return nil
	}
	for r, err := range migrate.RecordsOf(in) {
		if err != nil {
			return err
		}
		c, found := byRoute[r.Route]
		var doc bson.D
		if !found || r.Kind != "document" || bson.UnmarshalExtJSON(r.Value, true, &doc) != nil {
			return migrate.ArchiveMismatch(p.core.module, rules.Name, r.Route, fmt.Sprintf("a %s record: the module has no tenant-scoped route %q, or the value is not a document", r.Kind, r.Route),
				"import an unaltered archive into an app with the archive's routes")
		}
		if c.tagged {
			doc = append(withoutField(doc, fieldTenant), bson.E{Key: fieldTenant, Value: tenant.String()})
		}
		if r.Meta["id"] == "tenant" {
			id, ok := doc[0].Value.(string)
			if !ok || doc[0].Key != "_id" || !c.tagged {
				return migrate.ArchiveMismatch(p.core.module, rules.Name, r.Route, "a document marked with a tenant-prefixed _id has no string _id first, or its route is not tagged", "import an unaltered archive")
			}
			doc[0].Value = tenant.Hex() + ":" + id
		}
		if cur == nil || cur.route != c.route || len(batch) == importBatchDocs {
			if err := flush(); err != nil {
				return err
			}
			cur = &c
		}
		batch = append(batch, doc)
	}
	return flush()
}
