package soak_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/tenancy"
)

// check reads every sink, as each tenant through the adapters and as the
// operator through raw connections, and counts.
func check(ctx context.Context, s *sinks, admin *pgx.Conn, e env, servers []*privatePG, sent map[tenancy.ID]int) ([]*tally, error) {
	d, tenants := s.deps, e.tenants
	var out []*tally
	last := time.Now()
	add := func(t *tally) *tally {
		if len(out) > 0 {
			out[len(out)-1].took = time.Since(last)
		}
		last = time.Now()
		out = append(out, t)
		return t
	}
	defer func() {
		if len(out) > 0 {
			out[len(out)-1].took = time.Since(last)
		}
	}()

	for _, docs := range []struct {
		sink  string
		route *postgres.Documents[Body]
	}{{"pg-namespace-docs", d.NS}, {"pg-tagged-docs", d.Tagged}} {
		t := add(&tally{sink: docs.sink})
		for _, id := range tenants {
			recs, err := docs.route.List(tenancy.WithTenant(ctx, id), document.Query{})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", docs.sink, err)
			}
			seen, cross := map[string]int{}, 0
			for _, r := range recs {
				if r.ID != "doc-"+strconv.Itoa(r.Value.Seq) || file("doc", id, r.Value, seen) {
					cross++
				}
			}
			t.tenant(id, keys("doc", sent[id]), seen, cross)
		}
	}
	// The tagged table as the operator sees it: every row's tenant column
	// against its body.
	{
		t := add(&tally{sink: "pg-tagged-docs-raw"})
		rows, err := admin.Query(ctx, "SELECT tenant_id, value FROM public.soak_docs")
		if err != nil {
			return nil, err
		}
		byTenant, cross, err := raw(rows, "doc")
		if err != nil {
			return nil, err
		}
		for _, id := range tenants {
			t.tenant(id, keys("doc", sent[id]), byTenant[id], cross[id])
		}
	}

	// Outboxes: every acknowledged row present and marked delivered.
	{
		t := add(&tally{sink: "outbox-orders(tenant-global)"})
		rows, err := admin.Query(ctx, "SELECT tenant_id, payload FROM public.soak_orders_outbox WHERE delivered_at IS NOT NULL")
		if err != nil {
			return nil, err
		}
		byTenant, cross, err := raw(rows, streamOrders)
		if err != nil {
			return nil, err
		}
		for _, id := range tenants {
			t.tenant(id, keys(streamOrders, sent[id]), byTenant[id], cross[id])
		}
	}
	{
		t := add(&tally{sink: "outbox-audits(namespace)"})
		for _, id := range tenants {
			schema := pgx.Identifier{postgres.SchemaName(schemaPrefix, id), "audits_outbox"}.Sanitize()
			rows, err := admin.Query(ctx, "SELECT tenant_id, payload FROM "+schema+" WHERE delivered_at IS NOT NULL")
			if err != nil {
				return nil, err
			}
			byTenant, cross, err := raw(rows, streamAudits)
			if err != nil {
				return nil, err
			}
			// A row in this schema under any other tenant is cross-tenant.
			n := 0
			for other := range byTenant {
				if other != id {
					for _, c := range byTenant[other] {
						n += c
					}
				}
			}
			for _, c := range cross {
				n += c
			}
			t.tenant(id, keys(streamAudits, sent[id]), byTenant[id], n)
		}
	}

	// The dedicated leg: each tenant's database on its own server.
	if err := checkDedicated(ctx, d, e.ded, servers, sent, tenants, add); err != nil {
		return nil, err
	}

	// Kafka, as handled by the consumers: before the inbox.
	s.mu.Lock()
	for _, st := range []struct{ stream, sink string }{
		{streamOrders, "kafka-orders(per-tenant topics, sharded consumer)"},
		{streamAudits, "kafka-audits(shared topic, header-bound consumer)"},
		{streamDedicated, "kafka-dedicated(shared topic, header-bound consumer)"},
	} {
		t := add(&tally{sink: st.sink, dupOK: true})
		for _, id := range tenants {
			seen := map[string]int{}
			for i, n := range s.kafka[st.stream][id] {
				if n > 0 {
					seen[st.stream+"/"+strconv.Itoa(i+1)] = int(n)
				}
			}
			t.tenant(id, keys(st.stream, sent[id]), seen, s.kafkaCross[st.stream][id])
		}
	}
	dead := s.dead
	mongoDup := make(map[tenancy.ID]int, len(s.mongoDup))
	for k, v := range s.mongoDup {
		mongoDup[k] = v
	}
	s.mu.Unlock()
	if dead > 0 {
		return nil, fmt.Errorf("%d records dead-lettered: every record the relay writes carries its tenant header", dead)
	}

	// After the inbox: the sink rows written in the inbox's transaction.
	{
		t := add(&tally{sink: "pg-inbox-sink"})
		rows, err := admin.Query(ctx, "SELECT tenant_id, stream, body FROM "+sinkTable)
		if err != nil {
			return nil, err
		}
		byTenant, cross := map[tenancy.ID]map[string]int{}, map[tenancy.ID]int{}
		var tb [16]byte
		var stream string
		var body []byte
		_, err = pgx.ForEachRow(rows, []any{&tb, &stream, &body}, func() error {
			id, _ := tenancy.IDFromBytes(tb)
			if byTenant[id] == nil {
				byTenant[id] = map[string]int{}
			}
			c, err := bodyKey(stream, id, body, byTenant[id])
			if c {
				cross[id]++
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, id := range tenants {
			t.tenant(id, records(sent[id]), byTenant[id], cross[id])
			marks, err := d.Inbox.Count(tenancy.WithTenant(ctx, id))
			if err != nil {
				return nil, err
			}
			if want := len(streams) * sent[id]; marks != want {
				t.extra += marks - want
				t.note("%s: %d inbox marks for %d records", id, marks, want)
			}
		}
	}
	{
		t := add(&tally{sink: "redis-counter(tagged)", noCross: true})
		for _, id := range tenants {
			for _, st := range streams {
				n, err := d.Counter.Get(tenancy.WithTenant(ctx, id), st)
				if err != nil {
					return nil, err
				}
				t.count(id, st, sent[id], int(n))
			}
		}
	}
	{
		t := add(&tally{sink: "redis-cache(namespace)", noDup: true})
		for _, id := range tenants {
			bound := tenancy.WithTenant(ctx, id)
			seen, cross := map[string]int{}, 0
			for _, st := range streams {
				for seq := 1; seq <= sent[id]; seq++ {
					v, ok, err := d.Cache.Get(bound, st+"-"+strconv.Itoa(seq))
					if err != nil {
						return nil, err
					}
					if !ok {
						continue
					}
					c, err := bodyKey(st, id, v, seen)
					if err != nil {
						return nil, err
					}
					if c {
						cross++
					}
				}
			}
			t.tenant(id, records(sent[id]), seen, cross)
		}
	}
	// MongoDB: every document as the operator sees it (the tenant field
	// against the body), then through the adapter as a few tenants (each
	// of FerretDB's filtered reads scans the shared collection, too slow
	// under the race detector to repeat fifty times).
	{
		t := add(&tally{sink: "mongo-docs-raw(tagged)"})
		byTenant, cross, err := mongoRaw(ctx, e.mongoURI)
		if err != nil {
			return nil, err
		}
		for _, id := range tenants {
			t.tenant(id, records(sent[id]), byTenant[id], cross[id])
			t.duplicate += mongoDup[id]
		}
	}
	{
		t := add(&tally{sink: fmt.Sprintf("mongo-docs(tagged, as %d tenants)", min(5, len(tenants)))})
		for _, id := range tenants[:min(5, len(tenants))] {
			recs, err := d.Mongo.List(tenancy.WithTenant(ctx, id), document.Query{})
			if err != nil {
				return nil, err
			}
			seen, cross := map[string]int{}, 0
			for _, r := range recs {
				stream, seq, _ := strings.Cut(r.ID, "-")
				if seq != strconv.Itoa(r.Value.Seq) || file(stream, id, r.Value, seen) {
					cross++
				}
			}
			t.tenant(id, records(sent[id]), seen, cross)
		}
	}
	return out, nil
}

// mongoRaw reads the shared collection with a client of its own and
// files each document by its tenant field.
func mongoRaw(ctx context.Context, uri string) (map[tenancy.ID]map[string]int, map[tenancy.ID]int, error) {
	c, err := driver.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	cur, err := c.Database("soak").Collection("records").Find(ctx, bson.D{})
	if err != nil {
		return nil, nil, err
	}
	defer cur.Close(ctx)
	byTenant, cross := map[tenancy.ID]map[string]int{}, map[tenancy.ID]int{}
	for cur.Next(ctx) {
		var doc struct {
			Tenant string `bson:"tenant_id"`
			ID     string `bson:"id"`
			Doc    struct {
				Tenant string        `bson:"tenant"`
				Seq    bson.RawValue `bson:"seq"`
			} `bson:"doc"`
		}
		if err := cur.Decode(&doc); err != nil {
			return nil, nil, err
		}
		id, err := tenancy.ParseID(doc.Tenant)
		if err != nil {
			return nil, nil, fmt.Errorf("document %s: tenant field %q: %w", doc.ID, doc.Tenant, err)
		}
		seq, ok := doc.Doc.Seq.AsInt64OK()
		if !ok {
			f, isFloat := doc.Doc.Seq.DoubleOK()
			seq, ok = int64(f), isFloat
		}
		if byTenant[id] == nil {
			byTenant[id] = map[string]int{}
		}
		stream, idSeq, _ := strings.Cut(doc.ID, "-")
		if !ok || idSeq != strconv.FormatInt(seq, 10) || file(stream, id, Body{Tenant: doc.Doc.Tenant, Seq: int(seq)}, byTenant[id]) {
			cross[id]++
		}
	}
	return byTenant, cross, cur.Err()
}
