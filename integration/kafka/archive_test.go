package kafka_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type archiveKafka struct {
	fx.In
	Tenants *modules.Tenants
	Runner  *migrate.Runner `name:"events"`
	Orders  *kafka.Producer `name:"orders"`
	Audit   *kafka.Producer `name:"audit"`
}

// archiveKafkaApp is a module with a per-tenant topic of three
// partitions and a shared topic of two, their names under prefix.
func archiveKafkaApp(t *testing.T, s *space, prefix string) archiveKafka {
	t.Helper()
	var d archiveKafka
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		kafka.Module("events", kafka.Brokers(s.broker), modules.AllowTeardown(),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name(prefix + "orders.")), Partitions: 3}),
			kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.Shared(s.name(prefix + "audit")), Partitions: 2}),
			// The topic of orders again: archived once, under orders.
			kafka.ProducerRoute("orders-again", kafka.ProducerConfig{Topic: naming.PerTenant(s.name(prefix + "orders.")), Partitions: 3})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Runner.ProvisionShared(context.Background()); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	return d
}

func provision(t *testing.T, tenants *modules.Tenants, ids ...tenancy.ID) {
	t.Helper()
	for _, id := range ids {
		if _, err := tenants.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
}

// produceTagged writes n records of tag under id to p, keyed, with a
// header of the app's own.
func produceTagged(t *testing.T, p *kafka.Producer, id tenancy.ID, tag string, n int) {
	t.Helper()
	ctx := tenancy.WithTenant(context.Background(), id)
	for i := range n {
		if err := p.Produce(ctx, kafka.Message{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", tag, i),
			Headers: []kafkago.Header{{Key: "app", Value: []byte(tag)}}, EventID: fmt.Sprintf("%s-ev-%d", tag, i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func exportOf(t *testing.T, tenants *modules.Tenants, id tenancy.ID) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tenants.Export(context.Background(), id, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// archivedKafka is an archive's Kafka records by route, decoded.
func archivedKafka(t *testing.T, archive []byte) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	lines := bytes.Split(bytes.TrimSpace(archive), []byte("\n"))
	for _, l := range lines[1 : len(lines)-1] {
		var r migrate.Record
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		out[r.Route] = append(out[r.Route], v)
	}
	return out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// topicRecords reads every record of topic's partitions on broker.
func topicRecords(t *testing.T, broker, topic string, partitions int) []kafkago.Message {
	t.Helper()
	var out []kafkago.Message
	for p := range partitions {
		conn, err := kafkago.DialLeader(context.Background(), "tcp", broker, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		first, last, err := conn.ReadOffsets()
		if err == nil {
			_, err = conn.Seek(first, kafkago.SeekAbsolute)
		}
		for off := first; err == nil && off < last; {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			var m kafkago.Message
			if m, err = conn.ReadMessage(10 << 20); err == nil {
				m.Partition = p
				out = append(out, m)
				off = m.Offset + 1
			}
		}
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestArchiveRoundTripKafka: A's per-tenant topic (all its records,
// partition by partition) and its records of the shared topic (by
// header) come back under C in another app's topics, with the same
// partitions, offsets, keys, values, headers and timestamps; B's shared
// records, tenant-global ones and one with two tenant headers are not in
// A's archive; no record of C's names A, and each carries C's header.
func TestArchiveRoundTripKafka(t *testing.T) {
	s := newSpace(t)
	src, dst := archiveKafkaApp(t, s, "src-"), archiveKafkaApp(t, s, "dst-")
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, src.Tenants, a, b)
	provision(t, dst.Tenants, c)
	// A's shared records first: the target's shared topic is empty, so
	// its offsets come out as the source's (see docs/archive.md).
	produceTagged(t, src.Audit, a, "a-audit", 4)
	produceTagged(t, src.Orders, a, "a-order", 6)
	produceTagged(t, src.Audit, b, "b-audit", 3)
	produceTagged(t, src.Orders, b, "b-order", 2)
	w := rawWriter(t, s.broker)
	if err := w.WriteMessages(context.Background(),
		kafkago.Message{Topic: s.name("src-audit"), Key: []byte("k0"), Value: []byte("global-0")},
		kafkago.Message{Topic: s.name("src-audit"), Key: []byte("k1"), Value: []byte("twice-0"), Headers: []kafkago.Header{
			{Key: kafka.HeaderTenant, Value: []byte(a.String())}, {Key: kafka.HeaderTenant, Value: []byte(a.String())}}},
	); err != nil {
		t.Fatal(err)
	}
	archive := tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: src.Tenants, Into: dst.Tenants, A: a, B: b, C: c})
	recs := archivedKafka(t, archive)
	if len(recs["orders"]) != 6 || len(recs["audit"]) != 4 {
		t.Fatalf("A's archive holds %d orders and %d audit records, want 6 and 4:\n%s", len(recs["orders"]), len(recs["audit"]), archive)
	}
	for _, other := range []string{"b-audit", "b-order", "global-0", "twice-0"} {
		if bytes.Contains(archive, []byte(b64(other)[:8])) {
			t.Errorf("A's archive holds %s:\n%s", other, archive)
		}
	}
	for _, id := range []string{a.String(), a.Hex(), b.String()} {
		if bytes.Contains(archive[bytes.IndexByte(archive, '\n'):], []byte(id)) {
			t.Errorf("A's archive's records name tenant %s", id)
		}
	}
	if !strings.Contains(string(archive), `"reason":"records without a tenant header`) {
		t.Errorf("the manifest does not say tenant-global records are left out:\n%s", archive)
	}
	if !strings.Contains(string(archive), `{"module":"events","route":"orders-again","reason":"its topic is route orders's`) {
		t.Errorf("the manifest does not say where the records of orders-again are:\n%s", archive)
	}
	// C's records as the broker holds them: C's header, none of A's id.
	var got []kafkago.Message
	got = append(got, topicRecords(t, s.broker, s.name("dst-orders.")+c.Hex(), 3)...)
	got = append(got, topicRecords(t, s.broker, s.name("dst-audit"), 2)...)
	if len(got) != 10 {
		t.Fatalf("C's topics hold %d records, want 10", len(got))
	}
	for _, m := range got {
		if id, err := kafka.TenantFromHeaders(m.Headers); err != nil || id != c {
			t.Errorf("record %s: tenant %v (%v), want C", m.Value, id, err)
		}
		for _, h := range m.Headers {
			if strings.Contains(string(h.Value), a.String()) || strings.Contains(string(h.Value), a.Hex()) {
				t.Errorf("record %s names A in header %s", m.Value, h.Key)
			}
		}
	}
}

// TestArchiveRefusedKafka: a truncated or altered archive, one whose
// record names a tenant (resealed), and a target holding records (in
// its own topic, or by header in the shared one) are refused, nothing
// produced; the archive then imports into C in the same app, where the
// shared topic's records take new offsets.
func TestArchiveRefusedKafka(t *testing.T) {
	s := newSpace(t)
	r := archiveKafkaApp(t, s, "")
	a, b, c, d := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, r.Tenants, a, b, c, d)
	produceTagged(t, r.Orders, a, "a-order", 5)
	produceTagged(t, r.Audit, b, "b-audit", 2)
	produceTagged(t, r.Audit, a, "a-audit", 3)
	produceTagged(t, r.Orders, b, "b-order", 1)
	produceTagged(t, r.Audit, d, "d-audit", 1)
	archive := exportOf(t, r.Tenants, a)
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Truncated(archive), tenancy.CodeArchiveInvalid)
	v := b64("a-order-0")
	if !bytes.Contains(archive, []byte(v)) {
		t.Fatalf("no %s in\n%s", v, archive)
	}
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Altered(archive, v, b64("a-order-9")), tenancy.CodeArchiveMismatch)
	named := tenancytest.Reseal(t, tenancytest.Altered(archive, `"headers":[`,
		`"headers":[{"key":"`+kafka.HeaderTenant+`","value":"`+b64(b.String())+`"},`))
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, named, tenancy.CodeArchiveMismatch)
	tenancytest.CheckArchiveRefused(t, r.Tenants, b, archive, tenancy.CodeArchiveTargetNotEmpty)
	tenancytest.CheckArchiveRefused(t, r.Tenants, d, archive, tenancy.CodeArchiveTargetNotEmpty)
	if n := len(topicRecords(t, s.broker, s.name("orders.")+c.Hex(), 3)); n != 0 {
		t.Fatalf("refused imports produced %d records into C's topic", n)
	}

	if err := r.Tenants.Import(context.Background(), c, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	want, gotC := archivedKafka(t, archive), archivedKafka(t, exportOf(t, r.Tenants, c))
	for _, route := range []string{"orders", "audit"} {
		if len(gotC[route]) != len(want[route]) || len(want[route]) == 0 {
			t.Fatalf("route %s: C holds %d records, A %d", route, len(gotC[route]), len(want[route]))
		}
		for i := range want[route] {
			w, g := want[route][i], gotC[route][i]
			if route == "audit" {
				if g["offset"] == w["offset"] {
					t.Errorf("shared record %d kept its offset %v: it follows A's and B's records", i, g["offset"])
				}
				delete(w, "offset")
				delete(g, "offset")
			}
			jw, _ := json.Marshal(w)
			jg, _ := json.Marshal(g)
			if !bytes.Equal(jw, jg) {
				t.Errorf("route %s record %d: C %s, A %s", route, i, jg, jw)
			}
		}
	}
	// Imported once, C is no longer empty.
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, archive, tenancy.CodeArchiveTargetNotEmpty)

	// A tenant without its topics has nothing to export or import into:
	// refused, not an empty archive.
	e := tenancytest.FreshTenant(t)
	var sink bytes.Buffer
	if err := r.Tenants.Export(context.Background(), e, &sink); tenancy.CodeOf(err) != tenancy.CodeTenantNotProvisioned {
		t.Fatalf("exporting a tenant without topics: %v", err)
	}
	if err := r.Tenants.Import(context.Background(), e, bytes.NewReader(archive)); tenancy.CodeOf(err) != tenancy.CodeTenantNotProvisioned {
		t.Fatalf("importing into a tenant without topics: %v", err)
	}
	if topicExists(t, s.broker, s.name("orders.")+e.Hex()) {
		t.Fatal("reading a missing tenant's topic created it")
	}
}

// sections reads an archive whole and returns its non-empty sections.
func sections(t *testing.T, archive []byte) []migrate.ArchiveSection {
	t.Helper()
	var spool bytes.Buffer
	_, m, err := migrate.ReadArchive(bytes.NewReader(archive), &spool)
	if err != nil {
		t.Fatal(err)
	}
	var out []migrate.ArchiveSection
	for _, s := range m.Sections {
		if s.Records > 0 {
			out = append(out, s)
		}
	}
	return out
}

// TestArchiveRoundTripKafkaDedicated: on a routed client every topic is
// the tenant's, in its own cluster: A's records of the static topic,
// all of them, come back under C on the second cluster with the same
// sections (partitions, offsets, content), each carrying C's header.
func TestArchiveRoundTripKafkaDedicated(t *testing.T) {
	s := newSpace(t)
	brokerC := strings.Split(testsvc.KafkaSecondBroker(t), ",")[0]
	s.alsoOn(t, brokerC)
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	endpoints := map[tenancy.ID]string{a: s.broker, c: brokerC}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		ep, ok := endpoints[id]
		if !ok {
			return routing.Credentials{}, fmt.Errorf("no cluster for tenant %s", id)
		}
		return routing.Credentials{Endpoint: ep}, nil
	}
	var d archiveKafka
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		kafka.Module("events", kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}}), modules.AllowTeardown(),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(s.name("orders")), Partitions: 2}),
			kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.Shared(s.name("audit"))})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	provision(t, d.Tenants, a, c)
	produceTagged(t, d.Orders, a, "a-order", 5)
	produceTagged(t, d.Audit, a, "a-audit", 2)
	// A record of A's cluster without a tenant header is A's too: the
	// cluster is A's alone.
	if err := rawWriter(t, s.broker).WriteMessages(context.Background(),
		kafkago.Message{Topic: s.name("audit"), Value: []byte("untagged")}); err != nil {
		t.Fatal(err)
	}
	archive := exportOf(t, d.Tenants, a)
	if n := len(archivedKafka(t, archive)["audit"]); n != 3 {
		t.Fatalf("A's archive holds %d audit records, want 3:\n%s", n, archive)
	}
	if err := d.Tenants.Import(context.Background(), c, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	archiveC := exportOf(t, d.Tenants, c)
	if sa, sc := sections(t, archive), sections(t, archiveC); fmt.Sprint(sa) != fmt.Sprint(sc) || len(sa) != 2 {
		t.Fatalf("C's sections differ from A's:\nA %+v\nC %+v", sa, sc)
	}
	recs := append(topicRecords(t, brokerC, s.name("orders"), 2), topicRecords(t, brokerC, s.name("audit"), 1)...)
	if len(recs) != 8 {
		t.Fatalf("C's cluster holds %d records, want 8", len(recs))
	}
	for _, m := range recs {
		id, err := kafka.TenantFromHeaders(m.Headers)
		if string(m.Value) == "untagged" {
			if err == nil {
				t.Errorf("the untagged record came back with tenant %s", id)
			}
			continue
		}
		if err != nil || id != c {
			t.Errorf("record %s on C's cluster: tenant %v (%v), want C", m.Value, id, err)
		}
	}
}

// TestArchiveImportFewerPartitions: into a topic of fewer partitions, a
// record keeps its partition where the target has it; the others go
// where their key hashes, as a producer's writer would put them.
func TestArchiveImportFewerPartitions(t *testing.T) {
	s := newSpace(t)
	src := archiveKafkaApp(t, s, "src-")
	var dst archiveKafka
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		kafka.Module("events", kafka.Brokers(s.broker), modules.AllowTeardown(),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("dst-orders.")), Partitions: 2}),
			kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.Shared(s.name("dst-audit"))})),
		fx.Populate(&dst))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := dst.Runner.ProvisionShared(context.Background()); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, src.Tenants, a)
	provision(t, dst.Tenants, c)
	produceTagged(t, src.Orders, a, "a-order", 9)
	archive := exportOf(t, src.Tenants, a)
	from := map[string]int{} // value → source partition
	fromP2 := 0
	for _, r := range archivedKafka(t, archive)["orders"] {
		v, _ := base64.StdEncoding.DecodeString(r["value"].(string))
		from[string(v)] = int(r["partition"].(float64))
		if from[string(v)] == 2 {
			fromP2++
		}
	}
	if len(from) != 9 || fromP2 == 0 {
		t.Fatalf("want 9 records, some in partition 2: %v", from)
	}
	if err := dst.Tenants.Import(context.Background(), c, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	got := topicRecords(t, s.broker, s.name("dst-orders.")+c.Hex(), 2)
	if len(got) != 9 {
		t.Fatalf("C's topic holds %d records, want 9", len(got))
	}
	for _, m := range got {
		want := from[string(m.Value)]
		if want >= 2 {
			want = (&kafkago.Hash{}).Balance(kafkago.Message{Key: m.Key}, 0, 1)
		}
		if m.Partition != want {
			t.Errorf("record %s (source partition %d) in partition %d, want %d", m.Value, from[string(m.Value)], m.Partition, want)
		}
	}
}
