package tenantotel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BatcherConfig bounds a Batcher. Zero fields take the defaults.
type BatcherConfig struct {
	// BatchSize is how many spans one export sends, and the count that
	// wakes the exporting goroutine early (default 512).
	BatchSize int
	// Every is the longest a finished span waits to be exported (default 5 s).
	Every time.Duration
	// QueueSize bounds the spans held; past it new spans are dropped and
	// counted (default 2048).
	QueueSize int
}

// Batcher is a span processor that exports finished spans in batches,
// like the SDK's BatchSpanProcessor, but wakes its exporting goroutine
// once a batch (or every Every) instead of once a span: the SDK's
// processor hands each span to its goroutine over a channel, and on a
// small machine that wake-up costs a traced call more than the span does
// (docs/performance.md, P11). A span is appended under a short lock.
type Batcher struct {
	exp   sdktrace.SpanExporter
	cfg   BatcherConfig
	mu    sync.Mutex
	batch []sdktrace.ReadOnlySpan
	// exporting serialises exports: the loop's, ForceFlush's and Shutdown's.
	exporting sync.Mutex
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	stopped   atomic.Bool
	dropped   atomic.Int64
	once      sync.Once
}

var _ sdktrace.SpanProcessor = (*Batcher)(nil)

// NewBatcher starts a Batcher exporting to exp.
func NewBatcher(exp sdktrace.SpanExporter, cfg BatcherConfig) *Batcher {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 512
	}
	if cfg.Every <= 0 {
		cfg.Every = 5 * time.Second
	}
	if cfg.QueueSize < cfg.BatchSize {
		cfg.QueueSize = max(2048, cfg.BatchSize)
	}
	b := &Batcher{exp: exp, cfg: cfg, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// OnStart does nothing: only finished spans are exported.
func (b *Batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span; a full queue drops it (Dropped counts).
func (b *Batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if b.stopped.Load() || !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.batch) >= b.cfg.QueueSize {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	b.batch = append(b.batch, s)
	full := len(b.batch) == b.cfg.BatchSize
	b.mu.Unlock()
	if full {
		select {
		case b.kick <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// Dropped is how many spans a full queue dropped.
func (b *Batcher) Dropped() int64 { return b.dropped.Load() }

func (b *Batcher) loop() {
	defer close(b.done)
	t := time.NewTicker(b.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.kick:
		}
		_ = b.export(context.Background())
	}
}

// export sends everything queued, a batch at a time; a failed batch is
// lost (as with the SDK's processor) and the next ones are still sent.
func (b *Batcher) export(ctx context.Context) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	b.mu.Lock()
	spans := b.batch
	b.batch = nil
	b.mu.Unlock()
	var errs []error
	for len(spans) > 0 {
		n := min(len(spans), b.cfg.BatchSize)
		if err := b.exp.ExportSpans(ctx, spans[:n]); err != nil {
			errs = append(errs, err)
		}
		spans = spans[n:]
	}
	return errors.Join(errs...)
}

// ForceFlush exports every queued span before it returns.
func (b *Batcher) ForceFlush(ctx context.Context) error { return b.export(ctx) }

// Shutdown stops the loop, exports what is queued and shuts the exporter
// down; spans ended afterwards are ignored.
func (b *Batcher) Shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		b.stopped.Store(true)
		close(b.stop)
		<-b.done
		if err = b.export(ctx); err == nil {
			err = b.exp.Shutdown(ctx)
		}
	})
	return err
}
