package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenantwire/tenantwire/tenancy"
)

// CheckSpan is the name of the span that records an app's refusal at
// fx.New.
const CheckSpan = "tenantwire.check"

// WiringRefused records the app's wiring refusals (fx.New) as one span, an
// event per refusal with its code, module and route, then flushes the
// provider when it can (a refused app never stops, so its batch would
// otherwise never be exported).
func (t *Telemetry) WiringRefused(errs []error) {
	if t == nil || t.tracer == nil || len(errs) == 0 {
		return
	}
	_, span := t.tracer.Start(context.Background(), CheckSpan)
	for _, err := range errs {
		attrs := []trace.EventOption{trace.WithAttributes(AttrErrorCode.String(errorCode(err)))}
		var te *tenancy.Error
		if errors.As(err, &te) {
			attrs = append(attrs, trace.WithAttributes(AttrModule.String(te.Module), AttrRoute.String(te.Route), AttrBackend.String(te.Backend)))
		}
		span.RecordError(err, attrs...)
	}
	span.SetStatus(codes.Error, errorCode(errs[0]))
	span.End()
	if f, ok := t.cfg.TracerProvider.(interface{ ForceFlush(context.Context) error }); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.ForceFlush(ctx)
	}
}
