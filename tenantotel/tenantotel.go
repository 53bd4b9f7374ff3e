// Package tenantotel wires the OpenTelemetry SDK into a tenantwire app:
// a TracerProvider sending spans to the processors the app gives, a
// MeterProvider read by the Prometheus exporter, GET /metrics on the
// operator listener, and the *telemetry.Telemetry every module, boundary,
// relay and consumer records through.
//
// It is a module of its own so that only an app that wires it pulls the
// SDK and the Prometheus client in: the library itself needs only the
// OpenTelemetry API (package telemetry), and an app that wires another
// SDK or exporter gives telemetry.Provide its own providers instead.
package tenantotel

import (
	"context"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// MetricsPath is where the operator listener serves the Prometheus text.
const MetricsPath = "/metrics"

// Config is the SDK's wiring.
type Config struct {
	// Telemetry is the tenant policies and the propagator; its providers
	// are the ones this module builds.
	Telemetry telemetry.Config
	// SpanProcessors receive every finished span (an OTLP exporter behind
	// NewBatcher, or tracetest's in-memory recorder).
	// None: no tracing, metrics only.
	SpanProcessors []sdktrace.SpanProcessor
	// Sampler decides which traces are kept; nil: parent-based, always on.
	Sampler sdktrace.Sampler
	// Resource names the service on spans and metrics; nil: the SDK's
	// default (service.name from OTEL_SERVICE_NAME).
	Resource *resource.Resource
	// Registry is where the metrics are registered and served from; nil:
	// a registry of the app's own (never the process-wide default, so two
	// apps in one process do not collide).
	Registry *prometheus.Registry
	// NoMetricsRoute: do not add GET /metrics to the operator listener
	// (serve Handler yourself).
	NoMetricsRoute bool
}

// Providers are what the module builds, for an app that wants them
// (a gRPC stats handler, its own instruments).
type Providers struct {
	Tracer   *sdktrace.TracerProvider // nil without SpanProcessors
	Meter    *sdkmetric.MeterProvider
	Registry *prometheus.Registry
}

// Handler serves the registry in the Prometheus text format.
func (p *Providers) Handler() http.Handler {
	return promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{})
}

// Module provides *Providers and the app's *telemetry.Telemetry, and
// serves GET /metrics on tenanthttp's operator listener. The providers
// flush and shut down when the app stops.
func Module(cfg Config) fx.Option {
	opts := []fx.Option{
		fx.Provide(func(lc fx.Lifecycle) (*Providers, error) { return build(cfg, lc) }),
		fx.Provide(func(p *Providers) (*telemetry.Telemetry, error) {
			tc := cfg.Telemetry
			tc.MeterProvider = p.Meter
			if p.Tracer != nil {
				tc.TracerProvider = p.Tracer
			}
			return telemetry.New(tc)
		}),
	}
	if !cfg.NoMetricsRoute {
		opts = append(opts, tenanthttp.RouteWith("GET "+MetricsPath, tenanthttp.Operator,
			func(p *Providers) http.Handler { return p.Handler() }))
	}
	return fx.Module("tenantotel", opts...)
}

func build(cfg Config, lc fx.Lifecycle) (*Providers, error) {
	p := &Providers{Registry: cfg.Registry}
	if p.Registry == nil {
		p.Registry = prometheus.NewRegistry()
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(p.Registry))
	if err != nil {
		return nil, err
	}
	mopts := []sdkmetric.Option{sdkmetric.WithReader(exp)}
	if cfg.Resource != nil {
		mopts = append(mopts, sdkmetric.WithResource(cfg.Resource))
	}
	p.Meter = sdkmetric.NewMeterProvider(mopts...)
	if len(cfg.SpanProcessors) > 0 {
		topts := []sdktrace.TracerProviderOption{}
		for _, sp := range cfg.SpanProcessors {
			topts = append(topts, sdktrace.WithSpanProcessor(sp))
		}
		if cfg.Sampler != nil {
			topts = append(topts, sdktrace.WithSampler(cfg.Sampler))
		}
		if cfg.Resource != nil {
			topts = append(topts, sdktrace.WithResource(cfg.Resource))
		}
		p.Tracer = sdktrace.NewTracerProvider(topts...)
	}
	lc.Append(fx.StopHook(func(ctx context.Context) error {
		var errs []error
		if p.Tracer != nil {
			errs = append(errs, p.Tracer.Shutdown(ctx))
		}
		return errors.Join(append(errs, p.Meter.Shutdown(ctx))...)
	}))
	return p, nil
}
