package tenantotel_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenantwire/tenantwire/tenantotel"
)

// TestBatcherExportsEverySpanOnce: spans reach the exporter once each,
// a batch at a time, by the batch filling, by ForceFlush and at Shutdown;
// a full queue drops and counts; sampled-out spans and spans after
// Shutdown are not exported.
func TestBatcherExportsEverySpanOnce(t *testing.T) {
	ctx := context.Background()
	mem := tracetest.NewInMemoryExporter()
	exp := &heldExporter{InMemoryExporter: mem, entered: make(chan struct{}, 1), release: make(chan struct{})}
	b := tenantotel.NewBatcher(exp, tenantotel.BatcherConfig{BatchSize: 10, QueueSize: 25, Every: time.Hour})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	tr := tp.Tracer("t")
	end := func(n int) {
		for range n {
			_, s := tr.Start(ctx, "call")
			s.End()
		}
	}
	// A full batch wakes the exporter without waiting for Every; hold
	// that export so the queue fills behind it.
	end(10)
	select {
	case <-exp.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("a full batch did not wake the exporter")
	}
	// Past the queue bound spans are dropped, not held without limit.
	end(30)
	close(exp.release)
	if err := b.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	got, dropped := len(mem.GetSpans()), b.Dropped()
	if got != 35 || dropped != 5 {
		t.Fatalf("%d exported and %d dropped of 40 with a queue of 25 behind a held export, want 35 and 5", got, dropped)
	}
	// Sampled-out spans are not exported.
	never := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b), sdktrace.WithSampler(sdktrace.NeverSample()))
	for range 5 {
		_, s := never.Tracer("t").Start(ctx, "unsampled")
		s.End()
	}
	end(3)
	if err := b.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(mem.GetSpans()); n != got+3 {
		t.Fatalf("%d spans, want %d (3 more, no unsampled ones)", n, got+3)
	}
	// Shutdown exports what is queued, then shuts the exporter down.
	end(2)
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := exp.exported.Load(); n != int64(got+5) {
		t.Fatalf("%d spans exported in all, want %d: Shutdown must export the queue", n, got+5)
	}
	// Spans ended afterwards go nowhere.
	_, s := tr.Start(ctx, "late")
	s.End()
	if err := b.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range mem.GetSpans() {
		if s.Name == "late" {
			t.Fatal("a span ended after Shutdown was exported")
		}
	}
}

// heldExporter holds its first export until release is closed.
type heldExporter struct {
	*tracetest.InMemoryExporter
	entered  chan struct{}
	release  chan struct{}
	exported atomic.Int64
}

func (h *heldExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	select {
	case h.entered <- struct{}{}:
		<-h.release
	default:
	}
	h.exported.Add(int64(len(spans)))
	return h.InMemoryExporter.ExportSpans(ctx, spans)
}
