package neo4j

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// An archived graph is, per database of walk (the families Teardown
// removes), its nodes (family "nodes", kind "node", Key the node's
// number in the archive, Value {labels, props}) then its relationships
// (family "relationships", kind "relationship", Value {type, from, to,
// props}, from and to node numbers). Element ids are not carried: the
// server assigns them, so an import gives every node and relationship a
// new one. The tenant property is not carried either; an import stamps
// the target's on a tagged route.
//
// Order is by content, never by element id, so two exports of the same
// graph, in any database, are the same archive: nodes by their sorted
// labels then properties, relationships by their ends' content, type and
// properties. Nodes alike in labels and properties are interchangeable;
// their numbers follow the server's order among them.

const (
	famNodes = "nodes"
	famRels  = "relationships"
)

type archivedNode struct {
	Labels []string       `json:"labels"`
	Props  map[string]any `json:"props"`
}

type archivedRel struct {
	Type  string         `json:"type"`
	From  string         `json:"from"`
	To    string         `json:"to"`
	Props map[string]any `json:"props"`
}

// archiveScope is walk's family: which of the database's nodes and
// relationships are the tenant's.
func archiveScope(fam neoFamily) (nodes, rels string) {
	if fam == famTagged {
		is := func(v string) string { return v + "." + TenantProperty + " = $tenant" }
		return is("n") + " AND " + notFramework,
			is("x") + " AND " + is("a") + " AND " + is("b") + " AND " + notFrameworkOf("a") + " AND " + notFrameworkOf("b")
	}
	return notFramework, notFrameworkOf("a") + " AND " + notFrameworkOf("b")
}

func notFrameworkOf(v string) string {
	return "NOT any(l IN labels(" + v + ") WHERE toLower(l) STARTS WITH '" + floors.ReservedPrefix + "')"
}

// Export writes tenant's graph, database by database of walk. It is no
// snapshot: Neo4j reads committed data, statement by statement, and the
// nodes are read before the relationships, so a write meanwhile may or
// may not be in the archive (a relationship to a node created after the
// nodes were read is left out). The element ids of the tenant's nodes
// (not their properties) are held while a database is exported, to number
// the relationships' ends.
func (o *lifecycleTarget) Export(ctx context.Context, tenant tenancy.ID, out migrate.ArchiveOut) error {
	out.Snapshot("none: Neo4j reads committed data statement by statement; nodes are read before relationships")
	for _, spec := range o.routes {
		d := rules.Decide(spec.floorsRoute(o.core.routed()))
		out.Tier(spec.name, d.Reached)
		if !d.NeedsTenant {
			out.Skip(spec.name, "shared: its graph is no tenant's")
		}
	}
	return o.walk(ctx, tenant, "exporting", func(ctx context.Context, r *route, sc scope, fam neoFamily) error {
		return exportDatabase(ctx, tenant, r, sc, fam, out)
	})
}

func exportDatabase(ctx context.Context, tenant tenancy.ID, r *route, sc scope, fam neoFamily, out migrate.ArchiveOut) error {
	sess := sc.drv.NewSession(ctx, sc.database)
	defer sess.Close(ctx)
	st, ok := sess.(streamer)
	if !ok {
		return fmt.Errorf("the driver cannot stream results")
	}
	labels, err := allLabels(ctx, st)
	if notFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// $labels sorted: a node's labels in one order whatever the
	// database's label tokens, so its place in the archive is the same.
	p := map[string]any{"tenant": tenant.String(), "labels": labels}
	nodeWhere, relWhere := archiveScope(fam)
	sorted := func(v string) string { return "[l IN $labels WHERE l IN labels(" + v + ")]" }
	numbers := map[string]string{}
	err = st.Stream(ctx, "MATCH (n) WHERE "+nodeWhere+" WITH n, "+sorted("n")+" AS ls, properties(n) AS p ORDER BY ls, p RETURN elementId(n), ls, p", p,
		func(rec *drv.Record) error {
			id, _ := rec.Values[0].(string)
			key := strconv.Itoa(len(numbers) + 1)
			numbers[id] = key
			v, err := archiveValue(archivedNode{Labels: stringsOf(rec.Values[1]), Props: nil}, rec.Values[2])
			if err != nil {
				return err
			}
			return out.Emit(migrate.Record{Route: r.spec.name, Family: famNodes, Kind: "node", Key: key, Value: v})
		})
	if err != nil {
		return err
	}
	return st.Stream(ctx, "MATCH (a)-[x]->(b) WHERE "+relWhere+
		" RETURN elementId(a), elementId(b), type(x), properties(x) ORDER BY "+sorted("a")+", properties(a), "+sorted("b")+", properties(b), type(x), properties(x)", p,
		func(rec *drv.Record) error {
			a, _ := rec.Values[0].(string)
			b, _ := rec.Values[1].(string)
			from, okF := numbers[a]
			to, okT := numbers[b]
			if !okF || !okT {
				return nil // an end written after the nodes were read
			}
			typ, _ := rec.Values[2].(string)
			v, err := archiveValue(archivedRel{Type: typ, From: from, To: to}, rec.Values[3])
			if err != nil {
				return err
			}
			return out.Emit(migrate.Record{Route: r.spec.name, Family: famRels, Kind: "relationship", Value: v})
		})
}

func allLabels(ctx context.Context, st streamer) ([]string, error) {
	var out []string
	err := st.Stream(ctx, "CALL db.labels() YIELD label RETURN label", nil, func(rec *drv.Record) error {
		if l, ok := rec.Values[0].(string); ok {
			out = append(out, l)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// archiveValue is the record's JSON: rec with props (the server's
// properties, the tenant property left out) encoded.
func archiveValue(rec any, props any) (json.RawMessage, error) {
	raw, _ := props.(map[string]any)
	enc := make(map[string]any, len(raw))
	for k, v := range raw {
		if k == TenantProperty {
			continue
		}
		e, err := encodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", k, err)
		}
		enc[k] = e
	}
	switch x := rec.(type) {
	case archivedNode:
		x.Props = enc
		return json.Marshal(x)
	case archivedRel:
		x.Props = enc
		return json.Marshal(x)
	}
	return nil, fmt.Errorf("no archive form for %T", rec)
}

// importBatch bounds one import transaction.
const importBatch = 500

// Import creates an archive's nodes and relationships in tenant's graph,
// which must hold none of the tenant's (what Verify counts), database by
// database of walk: nodes with the target's tenant property on a tagged
// route, then relationships between them. Writes go in transactions of
// importBatch records, not one: an interrupted import is rerun after
// Tenants.Offboard and Provision of the target (docs/archive.md). The
// archive's node numbers are mapped to the new element ids while a
// database is imported.
func (o *lifecycleTarget) Import(ctx context.Context, tenant tenancy.ID, in migrate.ArchiveIn) error {
	release, err := o.claimImport(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	held, err := o.Verify(ctx, tenant)
	if err != nil {
		return err
	}
	if len(held.Left) > 0 {
		return migrate.ArchiveTargetNotEmpty(o.core.module, rules.Name, tenant, held.Left[0].Family.Where)
	}
	var visited []string
	if err := o.walk(ctx, tenant, "importing", func(_ context.Context, r *route, _ scope, _ neoFamily) error {
		visited = append(visited, r.spec.name)
		return nil
	}); err != nil {
		return err
	}
	for _, sec := range in.Sections() {
		if !slices.Contains(visited, sec.Route) || (sec.Family != famNodes && sec.Family != famRels) {
			return o.mismatch(sec.Route, fmt.Sprintf("the archive holds family %q of route %q: the module has no such tenant-scoped route or family", sec.Family, sec.Route))
		}
	}
	recs := &peeked{in: in}
	err = o.walk(ctx, tenant, "importing", func(ctx context.Context, r *route, sc scope, _ neoFamily) error {
		return o.importDatabase(ctx, tenant, r, sc, recs)
	})
	if err != nil {
		return err
	}
	if rec, ok, err := recs.peek(); err != nil || ok {
		if err != nil {
			return err
		}
		return o.mismatch(rec.Route, "a record of route "+rec.Route+" comes after the records of the routes that follow it")
	}
	return nil
}

func (o *lifecycleTarget) mismatch(route, detail string) error {
	return migrate.ArchiveMismatch(o.core.module, rules.Name, route, detail, "import an unaltered archive into an app with the archive's routes")
}

// peeked is an ArchiveIn read one record ahead.
type peeked struct {
	in   migrate.ArchiveIn
	next *migrate.Record
}

func (p *peeked) peek() (migrate.Record, bool, error) {
	if p.next == nil {
		r, ok, err := p.in.Next()
		if err != nil || !ok {
			return migrate.Record{}, false, err
		}
		p.next = &r
	}
	return *p.next, true, nil
}

func (p *peeked) take() { p.next = nil }

func (o *lifecycleTarget) importDatabase(ctx context.Context, tenant tenancy.ID, r *route, sc scope, recs *peeked) error {
	b := r.builder(sc)
	b.tenant = tenant.String()
	stamp := func(v string) string {
		if r.tagged {
			return " SET " + v + "." + TenantProperty + " = $tenant"
		}
		return ""
	}
	createNodes := "UNWIND $rows AS row CREATE (n) SET n = row.props, n:$(row.labels)" + stamp("n") + " RETURN row.key, elementId(n)"
	createRels := "UNWIND $rows AS row MATCH (a) WHERE elementId(a) = row.from MATCH (b) WHERE elementId(b) = row.to " +
		"CREATE (a)-[x:$(row.type)]->(b) SET x = row.props" + stamp("x") + " RETURN count(x)"
	sess := sc.drv.NewSession(ctx, sc.database)
	defer sess.Close(ctx)
	ids := map[string]string{}
	var rows []any
	family := ""
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		batch := rows
		rows = nil
		_, err := sess.ExecuteWrite(ctx, func(tx runner) (any, error) {
			if family == famNodes {
				got, err := tx.Run(ctx, createNodes, map[string]any{"rows": batch, "tenant": tenant.String()})
				if err != nil {
					return nil, err
				}
				for _, rec := range got {
					key, _ := rec.Values[0].(string)
					ids[key], _ = rec.Values[1].(string)
				}
				return nil, nil
			}
			got, err := tx.Run(ctx, createRels, map[string]any{"rows": batch, "tenant": tenant.String()})
			if err != nil {
				return nil, err
			}
			if len(got) != 1 || got[0].Values[0] != int64(len(batch)) {
				// Both ends were created by this import a moment ago: a
				// lost end is a concurrent delete, and the batch is undone.
				return nil, fmt.Errorf("not every relationship of a batch of %d found both its ends", len(batch))
			}
			return nil, nil
		})
		if r.missingDatabase(err, tenant) {
			return r.notProvisioned(err, tenant, sc.database)
		}
		return err
	}
	for {
		rec, ok, err := recs.peek()
		if err != nil {
			return err
		}
		if !ok || rec.Route != r.spec.name {
			return flush()
		}
		recs.take()
		if rec.Family != family {
			if err := flush(); err != nil {
				return err
			}
			if family == famRels && rec.Family == famNodes {
				return o.mismatch(rec.Route, "a node record after the route's relationships")
			}
			family = rec.Family
		}
		row, err := o.importRow(b, rec, ids)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		if len(rows) == importBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// importRow is rec as the parameters of its create, its names checked as
// the route's own calls check them (no framework label, no tenant
// property).
func (o *lifecycleTarget) importRow(b builder, rec migrate.Record, ids map[string]string) (map[string]any, error) {
	bad := func(detail string) error { return o.mismatch(rec.Route, detail) }
	dec := json.NewDecoder(bytes.NewReader(rec.Value))
	dec.UseNumber()
	decodeProps := func(raw map[string]any) (map[string]any, error) {
		props := make(map[string]any, len(raw))
		for k, v := range raw {
			if k == TenantProperty {
				return nil, bad(fmt.Sprintf("property %q is the tenant marker the import stamps", TenantProperty))
			}
			if _, err := quote("property key", k); err != nil {
				return nil, err
			}
			d, err := decodeValue(v)
			if err != nil {
				return nil, bad(fmt.Sprintf("property %q: %v", k, err))
			}
			props[k] = d
		}
		return props, nil
	}
	switch {
	case rec.Family == famNodes && rec.Kind == "node":
		var n archivedNode
		if err := dec.Decode(&n); err != nil || rec.Key == "" {
			return nil, bad("a node record without a key or whose value is not {labels, props}")
		}
		if _, dup := ids[rec.Key]; dup {
			return nil, bad("node " + rec.Key + " twice")
		}
		ids[rec.Key] = ""
		for _, l := range n.Labels {
			if _, err := b.name("label", l); err != nil {
				return nil, err
			}
		}
		props, err := decodeProps(n.Props)
		if err != nil {
			return nil, err
		}
		return map[string]any{"key": rec.Key, "labels": n.Labels, "props": props}, nil
	case rec.Family == famRels && rec.Kind == "relationship":
		var x archivedRel
		if err := dec.Decode(&x); err != nil {
			return nil, bad("a relationship record whose value is not {type, from, to, props}")
		}
		from, to := ids[x.From], ids[x.To]
		if from == "" || to == "" {
			return nil, bad(fmt.Sprintf("a relationship between nodes %q and %q, not both in the archive's nodes of the route", x.From, x.To))
		}
		if _, err := b.name("relationship type", x.Type); err != nil {
			return nil, err
		}
		props, err := decodeProps(x.Props)
		if err != nil {
			return nil, err
		}
		return map[string]any{"from": from, "to": to, "type": x.Type, "props": props}, nil
	}
	return nil, bad(fmt.Sprintf("a %s record of family %q", rec.Kind, rec.Family))
}
