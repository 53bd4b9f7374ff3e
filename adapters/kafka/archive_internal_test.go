package kafka

import (
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/tenantwire/tenantwire/tenancy"
)

// An archived record loses its tenant headers and names where they
// stood; restoring it puts the target's there, and refuses an archive
// that names a tenant itself or whose positions do not fit.
func TestArchivedRecordRestoresTheTargetsHeader(t *testing.T) {
	src, dst := tenancy.MustParseID("00000000-0000-4000-8000-00000000000a"), tenancy.MustParseID("00000000-0000-4000-8000-00000000000c")
	rec := &kafkago.Record{Offset: 7, Time: time.UnixMilli(1700000000123), Key: nil, Value: kafkago.NewBytes([]byte{}),
		Headers: stamp([]kafkago.Header{{Key: "app", Value: []byte("x")}}, src, "ev", "")}
	a, err := archived(rec, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.TenantAt) != 1 || a.TenantAt[0] != 1 || len(a.Headers) != 2 || a.Key != nil || a.Value == nil || a.Offset != 7 || a.Partition != 2 {
		t.Fatalf("archived: %+v", a)
	}
	header, _ := dst.MarshalText()
	back, err := restored(a, header)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := TenantFromHeaders(back.Headers); err != nil || id != dst || back.Headers[1].Key != HeaderTenant || back.Headers[0].Key != "app" || back.Headers[2].Key != HeaderEventID {
		t.Fatalf("restored headers %+v (%v, %v)", back.Headers, id, err)
	}
	if !back.Time.Equal(rec.Time) || back.Key != nil || back.Value == nil {
		t.Fatalf("restored: %+v", back)
	}
	named := a
	named.Headers = append([]archivedHeader{{Key: HeaderTenant, Value: []byte(src.String())}}, a.Headers...)
	if _, err := restored(named, header); err == nil {
		t.Fatal("a record naming a tenant in its headers was restored")
	}
	off := a
	off.TenantAt = []int{5}
	if _, err := restored(off, header); err == nil {
		t.Fatal("tenant header positions past the headers were restored")
	}
}

// A record keeps its partition where the target topic has it; else its
// key picks one as a producer's writer would.
func TestArchivedRecordsPartition(t *testing.T) {
	if p := placeOf(archivedRecord{Partition: 2}, 3); p != 2 {
		t.Fatalf("partition 2 of 3 went to %d", p)
	}
	if p := placeOf(archivedRecord{Partition: 5}, 3); p != 2 {
		t.Fatalf("a keyless record of partition 5 went to %d of 3", p)
	}
	key := []byte("k1")
	want := (&kafkago.Hash{}).Balance(kafkago.Message{Key: key}, 0, 1)
	if p := placeOf(archivedRecord{Partition: 4, Key: key}, 2); p != want {
		t.Fatalf("a keyed record of partition 4 went to %d of 2, want %d", p, want)
	}
}

// A fetch's control batches move the export past their offsets; data
// batches do not (their records were read).
func TestPastControlSkipsTransactionMarkers(t *testing.T) {
	marker := protocol.NewControlBatch(protocol.ControlRecord{Version: 0, Type: 1})
	marker.Records = kafkago.NewRecordReader(kafkago.Record{Offset: 5})
	stream := &protocol.RecordStream{Records: []protocol.RecordReader{
		&protocol.RecordBatch{Records: kafkago.NewRecordReader(kafkago.Record{Offset: 3}, kafkago.Record{Offset: 4})}, marker}}
	if off := pastControl(stream, 5); off != 6 {
		t.Fatalf("past a marker at 5: %d, want 6", off)
	}
	if off := pastControl(kafkago.NewRecordReader(kafkago.Record{Offset: 9}), 5); off != 5 {
		t.Fatalf("a plain reader moved the offset to %d", off)
	}
}
