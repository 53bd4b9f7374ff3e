// Package telemetry is tenantwire's one place for traces and metrics:
// every adapter's call entry, the HTTP and gRPC boundaries, relays and
// consumers call it, so the attribute names, the tenant policy and the
// error codes are the same everywhere.
//
// It needs only the OpenTelemetry API. The app gives providers with
// Provide; an app that gives none provides no *Telemetry, every route
// holds a nil *Route and a call costs one nil check and no allocation.
// The SDK and the Prometheus exporter are wired by the nested module
// tenantotel, so the library's go.mod names neither.
package telemetry

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
)

// scopeName is the instrumentation scope of every tracer and meter.
const scopeName = "github.com/tenantwire/tenantwire"

// Span attribute keys.
const (
	AttrModule    = attribute.Key("tenantwire.module")
	AttrRoute     = attribute.Key("tenantwire.route")
	AttrKind      = attribute.Key("tenantwire.route.kind")
	AttrBackend   = attribute.Key("tenantwire.backend")
	AttrTier      = attribute.Key("tenantwire.tier")
	AttrTenant    = attribute.Key("tenantwire.tenant")
	AttrErrorCode = attribute.Key("tenantwire.error.code")
)

// Metric label keys: the log keys of modules (KeyModule, ...), so one
// name finds a tenant, module or route in logs and metrics alike.
const (
	labelModule  = "module"
	labelRoute   = "route"
	labelKind    = "kind"
	labelBackend = "backend"
	labelTier    = "tier"
	labelTenant  = "tenant"
	labelCode    = "code"
)

// LatencyBuckets are the route histogram's bucket boundaries in seconds,
// 100 µs to 10 s: the SDK's default boundaries are for milliseconds and
// would put every call in the first bucket.
var LatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// CodeUncoded labels an error that carries no tenancy code (a driver's
// own error), CodeCanceled one whose context ended first.
const (
	CodeUncoded  = "uncoded"
	CodeCanceled = "canceled"
)

// TenantPolicy says how a tenant appears on a span or a metric.
type TenantPolicy struct {
	mode policyMode
	key  []byte
}

type policyMode uint8

const (
	omit policyMode = iota
	raw
	hashed
)

// TenantOmit leaves the tenant out. It is the zero TenantPolicy.
var TenantOmit = TenantPolicy{}

// TenantRaw writes the tenant id as it is.
var TenantRaw = TenantPolicy{mode: raw}

// TenantHash writes HMAC-SHA256(key, tenant) as 32 hex digits: one
// tenant's calls still group together, and the id cannot be read back
// or guessed without the key. The key must not be empty.
func TenantHash(key []byte) TenantPolicy {
	return TenantPolicy{mode: hashed, key: append([]byte(nil), key...)}
}

// String names the policy.
func (p TenantPolicy) String() string {
	switch p.mode {
	case raw:
		return "raw"
	case hashed:
		return "hash"
	}
	return "omit"
}

// value is the tenant as the policy writes it; ok false when omitted.
func (p TenantPolicy) value(id tenancy.ID) (string, bool) {
	switch p.mode {
	case raw:
		return id.String(), true
	case hashed:
		m := hmac.New(sha256.New, p.key)
		b := id.Bytes()
		m.Write(b[:])
		return hex.EncodeToString(m.Sum(nil)[:16]), true
	}
	return "", false
}

// Config is what the app gives. Either provider may be nil: no spans, or
// no metrics.
type Config struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Propagator carries trace context (and baggage) across HTTP, gRPC,
	// Kafka headers and outbox rows. Nil: W3C trace context and baggage.
	Propagator propagation.TextMapPropagator
	// SpanTenant is how spans carry the tenant. The zero value omits it;
	// TenantRaw or TenantHash(key) put it on.
	SpanTenant TenantPolicy
	// MetricTenant is how metrics carry the tenant, only for the tenants
	// MetricTenants admits (all others are labelled "other"). Omitted by
	// default: a tenant label multiplies every series by the tenant count
	// (docs/observability.md has the arithmetic).
	MetricTenant TenantPolicy
	// MetricTenants is the bounded set of tenants that get their own
	// label; required when MetricTenant is not TenantOmit.
	MetricTenants func(tenancy.ID) bool
	// Baggage: the HTTP and gRPC boundaries put the bound tenant (under
	// SpanTenant's policy) into the request's baggage as tenantwire.tenant,
	// so downstream services see it. Off by default: baggage leaves the
	// process in every outgoing request.
	Baggage bool
	// Top, when set, keeps each route's heavy hitters (TopTenants, the
	// operator listener's GET /tenants/top, and with Top.Label the
	// tenantwire.tenant.top.* metrics) in a sketch of fixed size.
	Top *TopConfig
}

// Telemetry is the app's tracer, meter and policies. A nil *Telemetry is
// valid and records nothing.
type Telemetry struct {
	cfg    Config
	tracer trace.Tracer // nil: no tracing
	prop   propagation.TextMapPropagator

	meter        metric.Meter // nil: no metrics
	errs         metric.Int64Counter
	duration     metric.Float64Histogram
	tenantLabels sync.Map // tenancy.ID -> attribute.KeyValue
	lags         sync.Map // *Lag -> struct{}: the consumers' lag gauges
	behind       sync.Map // *behindRead -> struct{}: the modules' version gates
	top          *tops    // nil: no heavy-hitters view
}

// New builds a Telemetry from cfg.
func New(cfg Config) (*Telemetry, error) {
	if cfg.MetricTenant.mode != omit && cfg.MetricTenants == nil {
		return nil, &tenancy.Error{Code: tenancy.CodeWiringInvalid, Module: "telemetry",
			Detail: "a tenant metric label is on for every tenant: each tenant multiplies every route's series",
			Fix:    "set telemetry.Config.MetricTenants to the bounded set of tenants that get their own label, or leave MetricTenant as TenantOmit"}
	}
	if cfg.SpanTenant.mode == hashed && len(cfg.SpanTenant.key) == 0 || cfg.MetricTenant.mode == hashed && len(cfg.MetricTenant.key) == 0 {
		return nil, &tenancy.Error{Code: tenancy.CodeWiringInvalid, Module: "telemetry",
			Detail: "telemetry.TenantHash was given an empty key, so anyone could compute a tenant's hash",
			Fix:    "pass telemetry.TenantHash a secret key of at least 16 bytes"}
	}
	if cfg.Top != nil {
		if err := checkTop(*cfg.Top); err != nil {
			return nil, err
		}
	}
	t := &Telemetry{cfg: cfg, prop: cfg.Propagator}
	if cfg.Top != nil {
		t.top = &tops{cfg: cfg.Top.withDefaults()}
	}
	if t.prop == nil {
		t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(scopeName)
	}
	if cfg.MeterProvider != nil {
		t.meter = cfg.MeterProvider.Meter(scopeName)
		// Calls are the duration histogram's count (one measurement per
		// call, refused or not): a separate counter would double the cost
		// of every call for a number the histogram already has.
		var errs [2]error
		t.errs, errs[0] = t.meter.Int64Counter("tenantwire.route.errors",
			metric.WithDescription("Route calls that failed, by error code."), metric.WithUnit("{call}"))
		t.duration, errs[1] = t.meter.Float64Histogram("tenantwire.route.duration",
			metric.WithDescription("Route calls and their latency, from the call's entry until it gives its client back; its count is the number of calls."), metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(LatencyBuckets...))
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		if err := t.observePools(); err != nil {
			return nil, err
		}
		if err := t.observeLag(); err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		if err := t.observeBehind(); err != nil {
			return nil, err
		}
		if err := t.observeTop(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Provide gives the app a *Telemetry built from cfg: every module, the
// HTTP and gRPC boundaries, relays and consumers take it.
func Provide(cfg Config) fx.Option {
	return fx.Provide(func() (*Telemetry, error) { return New(cfg) })
}

// Tracer is the tracer (nil without a TracerProvider).
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// Meter is the meter (nil without a MeterProvider).
func (t *Telemetry) Meter() metric.Meter {
	if t == nil {
		return nil
	}
	return t.meter
}

// Propagator is the text-map propagator; W3C trace context and baggage
// on a nil *Telemetry.
func (t *Telemetry) Propagator() propagation.TextMapPropagator {
	if t == nil || t.prop == nil {
		return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return t.prop
}

// Baggage reports whether the boundaries put the tenant in baggage.
func (t *Telemetry) Baggage() bool { return t != nil && t.cfg.Baggage }

// SpanTenant is the tenant attribute under the span policy; ok false
// when the policy omits it.
func (t *Telemetry) SpanTenant(id tenancy.ID) (attribute.KeyValue, bool) {
	if t == nil || id.IsZero() {
		return attribute.KeyValue{}, false
	}
	v, ok := t.cfg.SpanTenant.value(id)
	return AttrTenant.String(v), ok
}

// metricTenant is the tenant label, "other" for tenants outside the
// bounded set; cached, so the hash runs once per tenant.
func (t *Telemetry) metricTenant(id tenancy.ID) (attribute.KeyValue, bool) {
	if t.cfg.MetricTenant.mode == omit {
		return attribute.KeyValue{}, false
	}
	if id.IsZero() || !t.cfg.MetricTenants(id) {
		return attribute.String(labelTenant, "other"), true
	}
	if kv, ok := t.tenantLabels.Load(id); ok {
		return kv.(attribute.KeyValue), true
	}
	v, _ := t.cfg.MetricTenant.value(id)
	kv := attribute.String(labelTenant, v)
	t.tenantLabels.Store(id, kv)
	return kv, true
}

// errorCode is the code an error is counted and recorded under: its
// tenancy code, CodeCanceled, or CodeUncoded.
func errorCode(err error) string {
	var te *tenancy.Error
	switch {
	case errors.As(err, &te):
		return string(te.Code)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return CodeCanceled
	}
	return CodeUncoded
}

// recordError marks span failed with err and its code.
func recordError(span trace.Span, err error) {
	code := errorCode(err)
	span.RecordError(err, trace.WithAttributes(AttrErrorCode.String(code)))
	span.SetAttributes(AttrErrorCode.String(code))
	span.SetStatus(codes.Error, code)
}

// since is the clock; a var so the cost test can see its calls.
var since = time.Since
