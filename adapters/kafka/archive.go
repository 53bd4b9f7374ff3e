package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// An archived record is its route's, family "records", kind "record",
// its value archivedRecord's JSON. The tenant's own header is cut from
// its headers (TenantAt says where it stood) and topic names are not
// kept: an import rebuilds both for the target tenant.

// archiveFamily is the family of every Kafka section.
const archiveFamily = "records"

// archivedRecord is one Kafka record in an archive: where it was, when,
// and its bytes (base64; null for a null key or value).
type archivedRecord struct {
	Partition int              `json:"partition"`
	Offset    int64            `json:"offset"`
	Timestamp time.Time        `json:"timestamp"`
	Key       []byte           `json:"key"`
	Value     []byte           `json:"value"`
	Headers   []archivedHeader `json:"headers,omitempty"`
	// TenantAt is the positions among the record's headers where a
	// tenant header stood; an import puts the target tenant's there.
	TenantAt []int `json:"tenant_at,omitempty"`
}

type archivedHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// archiveTopic is one topic of a tenant's data: a topic of its own (all
// its records) or a shared one (the records whose header is the tenant).
type archiveTopic struct {
	route  string
	topic  string
	shared bool
}

// archiveTopics is tenant's topics, route by route, each topic once
// (under the first route naming it); out, when set, is told the tiers and
// what is left out.
func (p *lifecycleTarget) archiveTopics(tenant tenancy.ID, out migrate.ArchiveOut) ([]archiveTopic, error) {
	var topics []archiveTopic
	seen := map[string]string{} // topic → the route its records are under
	for _, spec := range p.routes {
		rt := newRoute(p.core, spec)
		if out != nil {
			out.Tier(spec.name, rules.Decide(spec.floorsRoute(p.core.pools != nil)).Reached)
		}
		name, err := rt.topicFor(tenant)
		if err != nil {
			return nil, err
		}
		if first, ok := seen[name]; ok {
			if out != nil {
				out.Skip(spec.name, "its topic is route "+first+"'s: its records are in that route's section")
			}
			continue
		}
		shared := !rt.perTenantTopic && !rt.routed
		if shared && out != nil {
			out.Skip(spec.name, "records without a tenant header in the shared topic are tenant-global, no tenant's; another tenant's records are never read into the archive")
		}
		seen[name] = spec.name
		topics = append(topics, archiveTopic{route: spec.name, topic: name, shared: shared})
	}
	return topics, nil
}

// extent is one partition's offsets an export covers: [first, high).
type extent struct {
	partition   int
	first, high int64
}

// spans reads every partition's earliest retained offset and high
// watermark of topics, all before any record is read.
func (p *lifecycleTarget) spans(ctx context.Context, cl *kafkago.Client, topics []archiveTopic) (map[string][]extent, error) {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.topic
	}
	md, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: names})
	if err != nil {
		return nil, fmt.Errorf("kafka: module %s: reading the tenant's topics: %w", p.core.module, err)
	}
	req := map[string][]kafkago.OffsetRequest{}
	for _, t := range topics {
		i := slices.IndexFunc(md.Topics, func(mt kafkago.Topic) bool { return mt.Name == t.topic })
		if i < 0 || md.Topics[i].Error != nil || len(md.Topics[i].Partitions) == 0 {
			var cause error = kafkago.UnknownTopicOrPartition
			if i >= 0 && md.Topics[i].Error != nil {
				cause = md.Topics[i].Error
			}
			if t.shared {
				return nil, fmt.Errorf("kafka: module %s: shared topic %s of route %s: %w", p.core.module, t.topic, t.route, cause)
			}
			return nil, notProvisioned(p.core.module, t.route, t.topic, cause)
		}
		for _, pt := range md.Topics[i].Partitions {
			req[t.topic] = append(req[t.topic], kafkago.FirstOffsetOf(pt.ID), kafkago.LastOffsetOf(pt.ID))
		}
	}
	res, err := cl.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: req})
	if err != nil {
		return nil, fmt.Errorf("kafka: module %s: reading the offsets of the tenant's topics: %w", p.core.module, err)
	}
	out := map[string][]extent{}
	for _, t := range topics {
		for _, po := range res.Topics[t.topic] {
			if po.Error != nil {
				return nil, fmt.Errorf("kafka: module %s: offsets of topic %s partition %d: %w", p.core.module, t.topic, po.Partition, po.Error)
			}
			out[t.topic] = append(out[t.topic], extent{partition: po.Partition, first: po.FirstOffset, high: po.LastOffset})
		}
		if len(out[t.topic]) != len(req[t.topic])/2 {
			return nil, fmt.Errorf("kafka: module %s: the brokers listed the offsets of %d of the %d partitions of topic %s", p.core.module, len(out[t.topic]), len(req[t.topic])/2, t.topic)
		}
		slices.SortFunc(out[t.topic], func(a, b extent) int { return a.partition - b.partition })
	}
	return out, nil
}

// fetchMax bounds one fetch's bytes.
const fetchMax = 1 << 20

// scan calls fn with every record of one partition in [first, high), in
// offset order. A record retention removes meanwhile fails the scan: an
// export names every record it covers, or fails.
func scan(ctx context.Context, cl *kafkago.Client, topic string, s extent, fn func(*kafkago.Record) (bool, error)) error {
	stalled := 0
	for off := s.first; off < s.high; {
		res, err := cl.Fetch(ctx, &kafkago.FetchRequest{Topic: topic, Partition: s.partition, Offset: off, MinBytes: 1, MaxBytes: fetchMax, MaxWait: 500 * time.Millisecond})
		if err == nil {
			err = res.Error
		}
		if err != nil {
			return fmt.Errorf("reading partition %d from offset %d: %w", s.partition, off, err)
		}
		from := off
		for off < s.high {
			rec, err := res.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("reading partition %d at offset %d: %w", s.partition, off, err)
			}
			if rec.Offset < off {
				continue // a batch may start before the offset asked for
			}
			if rec.Offset >= s.high {
				return nil
			}
			more, err := fn(rec)
			if err != nil || !more {
				return err
			}
			off = rec.Offset + 1
		}
		off = pastControl(res.Records, off)
		if off == from {
			// Nothing below the high watermark came back: a record too large
			// for a fetch, or offsets the partition no longer has.
			if stalled++; stalled == 3 {
				return fmt.Errorf("partition %d: no record at offset %d, below the high watermark %d read at the start", s.partition, off, s.high)
			}
		} else {
			stalled = 0
		}
	}
	return nil
}

// pastControl is off moved past the control batches (transaction
// markers) of a fetch, which its reader skips: they are no one's data,
// and a partition ending in one would otherwise never reach its high
// watermark.
func pastControl(rr kafkago.RecordReader, off int64) int64 {
	stream, ok := rr.(*protocol.RecordStream)
	if !ok {
		return off
	}
	for _, b := range stream.Records {
		cb, ok := b.(*protocol.ControlBatch)
		if !ok {
			continue
		}
		for {
			rec, err := cb.ReadRecord()
			if err != nil {
				break
			}
			if rec.Offset >= off {
				off = rec.Offset + 1
			}
		}
	}
	return off
}

// tenantsRecord reports whether a shared topic's record is tenant's: it
// carries exactly one tenant header, naming tenant.
func tenantsRecord(rec *kafkago.Record, tenant tenancy.ID) bool {
	id, err := TenantFromHeaders(rec.Headers)
	return err == nil && id == tenant
}

// archived is rec in the archive's form, its tenant headers cut.
func archived(rec *kafkago.Record, partition int) (archivedRecord, error) {
	a := archivedRecord{Partition: partition, Offset: rec.Offset, Timestamp: rec.Time.UTC()}
	var err error
	if a.Key, err = kafkago.ReadAll(rec.Key); err != nil {
		return a, err
	}
	if a.Value, err = kafkago.ReadAll(rec.Value); err != nil {
		return a, err
	}
	for i, h := range rec.Headers {
		if h.Key == HeaderTenant {
			a.TenantAt = append(a.TenantAt, i)
			continue
		}
		a.Headers = append(a.Headers, archivedHeader{Key: h.Key, Value: h.Value})
	}
	return a, nil
}

// Export writes tenant's records: every record of its own topics, and
// its records of shared topics (by header), partition by partition, in
// offset order, from each partition's earliest retained offset to the
// high watermark read when the export began (all partitions' bounds are
// read before any record). It is no snapshot across partitions: records
// written meanwhile are left out, and retention removing one the export
// covers fails it.
func (p *lifecycleTarget) Export(ctx context.Context, tenant tenancy.ID, out migrate.ArchiveOut) error {
	topics, err := p.archiveTopics(tenant, out)
	if err != nil || len(topics) == 0 {
		out.Snapshot("none: the module has no topics")
		return err
	}
	_, cl, spans, done, err := p.reach(ctx, tenant, topics)
	if err != nil {
		return err
	}
	defer done()
	out.Snapshot(coverage(topics, spans))
	var line []byte
	for _, t := range topics {
		for _, s := range spans[t.topic] {
			err := scan(ctx, cl, t.topic, s, func(rec *kafkago.Record) (bool, error) {
				if t.shared && !tenantsRecord(rec, tenant) {
					return true, nil
				}
				a, err := archived(rec, s.partition)
				if err != nil {
					return false, err
				}
				if line, err = json.Marshal(a); err != nil {
					return false, err
				}
				return true, out.Emit(migrate.Record{Route: t.route, Family: archiveFamily, Kind: "record", Value: line})
			})
			if err != nil {
				return fmt.Errorf("kafka: module %s: exporting route %s: %w", p.core.module, t.route, err)
			}
		}
	}
	return nil
}

// reach opens tenant's client and an archive client over topics, and
// reads the topics' spans; done closes what it opened.
func (p *lifecycleTarget) reach(ctx context.Context, tenant tenancy.ID, topics []archiveTopic) (*client, *kafkago.Client, map[string][]extent, func(), error) {
	c, release, err := p.core.clientFor(ctx, tenant)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cl := archiveClient(c, topics)
	done := func() { closeProbe(cl); release() }
	spans, err := p.spans(ctx, cl, topics)
	if err != nil {
		c.recover(err)
		done()
		return nil, nil, nil, nil, err
	}
	return c, cl, spans, done, nil
}

// coverage is the module's snapshot line: how consistent the records are
// and the offsets covered, by route and partition (topic names hold the
// tenant's id, so they are left out).
func coverage(topics []archiveTopic, spans map[string][]extent) string {
	var b strings.Builder
	b.WriteString("none across partitions: each partition from its earliest retained offset to the high watermark read at the export's start, [first, high)")
	for _, t := range topics {
		fmt.Fprintf(&b, "; %s", t.route)
		if t.shared {
			b.WriteString(" (shared topic, the tenant's records by header)")
		}
		for _, s := range spans[t.topic] {
			fmt.Fprintf(&b, " p%d [%d,%d)", s.partition, s.first, s.high)
		}
	}
	return b.String()
}

// archiveClient is a probe of topics that keeps their metadata 10 s: an
// export or import makes one request after another to the same topics.
func archiveClient(c *client, topics []archiveTopic) *kafkago.Client {
	return c.probeFor(topicNames(topics), 10*time.Second)
}

func topicNames(topics []archiveTopic) []string {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.topic
	}
	return names
}

// importBatch bounds the records of one produce request.
const importBatch = 500

// Import produces an archive's records into tenant's topics (a shared
// topic's with tenant's header), which must hold none of the tenant's
// records. A record keeps its key, value, headers and timestamp, and its
// partition where the target topic has it (else the partition its key
// hashes to, as a producer's); its offset is the target partition's next.
// Produces are not one transaction: an interrupted import is rerun after
// Tenants.Offboard and Provision of the target (docs/archive.md).
func (p *lifecycleTarget) Import(ctx context.Context, tenant tenancy.ID, in migrate.ArchiveIn) error {
	topics, err := p.archiveTopics(tenant, nil)
	if err != nil {
		return err
	}
	byRoute := map[string]archiveTopic{}
	for _, t := range topics {
		byRoute[t.route] = t
	}
	for _, sec := range in.Sections() {
		if _, ok := byRoute[sec.Route]; !ok || sec.Family != archiveFamily {
			return migrate.ArchiveMismatch(p.core.module, rules.Name, sec.Route, fmt.Sprintf("the archive holds family %q of route %q: the module has no such route with a topic of its own", sec.Family, sec.Route),
				"import an unaltered archive into an app with the archive's routes")
		}
	}
	if len(topics) == 0 {
		return nil
	}
	c, cl, spans, done, err := p.reach(ctx, tenant, topics)
	if err != nil {
		return err
	}
	defer done()
	if err := p.empty(ctx, cl, tenant, topics, spans); err != nil {
		return err
	}
	header, err := tenant.MarshalText()
	if err != nil {
		return err
	}
	var (
		batch []kafkago.Record
		at    struct {
			topic     string
			partition int
		}
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := cl.Produce(ctx, &kafkago.ProduceRequest{Topic: at.topic, Partition: at.partition, RequiredAcks: kafkago.RequireAll, Records: kafkago.NewRecordReader(batch...)})
		batch = batch[:0]
		if err == nil {
			err = res.Error
		}
		if err == nil && len(res.RecordErrors) > 0 {
			err = fmt.Errorf("%d records refused", len(res.RecordErrors))
		}
		if err != nil {
			c.recover(err)
			return fmt.Errorf("kafka: module %s: importing into topic %s partition %d: %w", p.core.module, at.topic, at.partition, err)
		}
		return nil
	}
	for r, err := range migrate.RecordsOf(in) {
		if err != nil {
			return err
		}
		t := byRoute[r.Route]
		var a archivedRecord
		if r.Kind != "record" || t.topic == "" || json.Unmarshal(r.Value, &a) != nil {
			return migrate.ArchiveMismatch(p.core.module, rules.Name, r.Route, fmt.Sprintf("a %s record of route %q: the module has no such route, or the value is not a Kafka record", r.Kind, r.Route),
				"import an unaltered archive into an app with the archive's routes")
		}
		rec, err := restored(a, header)
		if err != nil {
			return migrate.ArchiveMismatch(p.core.module, rules.Name, r.Route, err.Error(), "import an unaltered archive")
		}
		partition := placeOf(a, len(spans[t.topic]))
		if at.topic != t.topic || at.partition != partition || len(batch) == importBatch {
			if err := flush(); err != nil {
				return err
			}
			at.topic, at.partition = t.topic, partition
		}
		batch = append(batch, rec)
	}
	return flush()
}

// empty refuses a target holding records: any record in a topic of its
// own, or one with its header in a shared topic (read to the end).
func (p *lifecycleTarget) empty(ctx context.Context, cl *kafkago.Client, tenant tenancy.ID, topics []archiveTopic, spans map[string][]extent) error {
	for _, t := range topics {
		for _, s := range spans[t.topic] {
			if s.high <= s.first {
				continue
			}
			if !t.shared {
				return migrate.ArchiveTargetNotEmpty(p.core.module, rules.Name, tenant, fmt.Sprintf("topic %s of route %s (partition %d)", t.topic, t.route, s.partition))
			}
			found := false
			err := scan(ctx, cl, t.topic, s, func(rec *kafkago.Record) (bool, error) {
				found = tenantsRecord(rec, tenant)
				return !found, nil
			})
			if err != nil {
				return fmt.Errorf("kafka: module %s: reading shared topic %s: %w", p.core.module, t.topic, err)
			}
			if found {
				return migrate.ArchiveTargetNotEmpty(p.core.module, rules.Name, tenant, fmt.Sprintf("shared topic %s of route %s (partition %d, by header)", t.topic, t.route, s.partition))
			}
		}
	}
	return nil
}

// restored is a's record for the target, whose tenant header is header:
// put back where the source's stood.
func restored(a archivedRecord, header []byte) (kafkago.Record, error) {
	n := len(a.Headers) + len(a.TenantAt)
	hs := make([]kafkago.Header, 0, n)
	rest := a.Headers
	for i := range n {
		if slices.Contains(a.TenantAt, i) {
			hs = append(hs, kafkago.Header{Key: HeaderTenant, Value: header})
			continue
		}
		if len(rest) == 0 {
			return kafkago.Record{}, fmt.Errorf("a record's tenant header positions %v do not fit its %d headers", a.TenantAt, len(a.Headers))
		}
		if rest[0].Key == HeaderTenant {
			return kafkago.Record{}, errors.New("a record carries a tenant header of its own: the archive names a tenant")
		}
		hs = append(hs, kafkago.Header{Key: rest[0].Key, Value: rest[0].Value})
		rest = rest[1:]
	}
	if len(rest) > 0 {
		return kafkago.Record{}, fmt.Errorf("a record's tenant header positions %v do not fit its %d headers", a.TenantAt, len(a.Headers))
	}
	return kafkago.Record{Time: a.Timestamp, Key: kafkago.NewBytes(a.Key), Value: kafkago.NewBytes(a.Value), Headers: hs}, nil
}

// placeOf is the target partition of a: its own where the target topic
// has it, else the one its key hashes to as a producer's writer hashes
// it (a record without a key: its partition modulo the count).
func placeOf(a archivedRecord, partitions int) int {
	if a.Partition >= 0 && a.Partition < partitions {
		return a.Partition
	}
	if a.Key == nil {
		return (a.Partition%partitions + partitions) % partitions
	}
	ids := make([]int, partitions)
	for i := range ids {
		ids[i] = i
	}
	return (&kafkago.Hash{}).Balance(kafkago.Message{Key: a.Key}, ids...)
}
