package kafka

import (
	"context"
	"slices"

	kafkago "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenantwire/tenantwire/floors"
)

// spanKind is a route's span kind: producer or consumer.
func spanKind(k floors.Kind) trace.SpanKind {
	if k == kindConsumer {
		return trace.SpanKindConsumer
	}
	return trace.SpanKindProducer
}

// traceHeaders replaces the trace-context headers of hs (traceparent,
// tracestate, baggage) with the context of ctx's span: a record carries
// the span that produced it, never a caller's or an older row's. hs
// unchanged without telemetry or a span.
func (p *Producer) traceHeaders(ctx context.Context, hs []kafkago.Header) []kafkago.Header {
	t := p.core.tel
	if t == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return hs
	}
	fields := t.Fields()
	hs = slices.DeleteFunc(hs, func(h kafkago.Header) bool { return slices.Contains(fields, h.Key) })
	for k, v := range t.Inject(ctx, nil) {
		hs = append(hs, kafkago.Header{Key: k, Value: []byte(v)})
	}
	return hs
}

// traceCarrier is the trace-context headers of a record, for the span
// that handles it to link to.
func (w *worker) traceCarrier(hs []kafkago.Header) map[string]string {
	fields := w.route.core.tel.Fields()
	out := make(map[string]string, len(fields))
	for _, h := range hs {
		if slices.Contains(fields, h.Key) {
			out[h.Key] = string(h.Value)
		}
	}
	return out
}
