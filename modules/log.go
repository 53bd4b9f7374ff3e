package modules

import (
	"context"
	"log/slog"

	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Log keys every background worker (relay, consumer, sweep, heartbeat)
// logs with, in every adapter, so one query finds a worker's failures.
const (
	KeyBackend = "backend"
	KeyModule  = "module"
	KeyRoute   = "route"
	KeyWorker  = "worker"
	KeyTenant  = "tenant"
	KeyError   = "error"
)

// WorkerLogger is the logger a background worker reports through: the
// app's *slog.Logger (slog.Default() when the graph provides none), with
// the worker's backend, module, route and name attached.
func WorkerLogger(app *slog.Logger, backend, module, route, worker string) *slog.Logger {
	if app == nil {
		app = slog.Default()
	}
	return app.With(KeyBackend, backend, KeyModule, module, KeyRoute, route, KeyWorker, worker)
}

// LogWorkerError logs a worker's failed pass at Warn, adding the tenant
// ctx binds, if any. Workers retry; the failure is not fatal.
// It is shards.WorkerConfig.Report with no OnError, the keys the same.
func LogWorkerError(ctx context.Context, log *slog.Logger, msg string, err error) {
	shards.WorkerConfig{Logger: log}.Report(ctx, msg, err)
}

// callSite is the module and route a context's work runs for.
type callSite struct{ module, route string }

type callSiteKey struct{}

// WithCallSite records on ctx the module and route the work it carries
// runs for: a consumer hands its handler such a context, so the
// handler's log lines name them through TenantHandler.
func WithCallSite(ctx context.Context, module, route string) context.Context {
	return context.WithValue(ctx, callSiteKey{}, callSite{module, route})
}

// callSiteOf is the module and route WithCallSite recorded on ctx.
func callSiteOf(ctx context.Context) (module, route string, ok bool) {
	cs, ok := ctx.Value(callSiteKey{}).(callSite)
	return cs.module, cs.route, ok
}

// TenantHandler wraps h so that every record logged with a context that
// binds a tenant carries it under KeyTenant, and one that carries a call
// site (WithCallSite) its module and route under KeyModule and KeyRoute:
// a handler's or a worker's log line names them without threading them
// through. A key the record or the logger (With) already has is not added
// again; a context with none passes the record as it is.
func TenantHandler(h slog.Handler) slog.Handler { return tenantHandler{Handler: h} }

// The keys TenantHandler adds, as bits of tenantHandler.has.
const (
	hasTenant uint8 = 1 << iota
	hasModule
	hasRoute
)

type tenantHandler struct {
	slog.Handler
	// has: the keys the logger's own attributes (With) already carry.
	has uint8
}

func (t tenantHandler) Handle(ctx context.Context, r slog.Record) error {
	id, bound := tenancy.FromContext(ctx)
	module, route, site := callSiteOf(ctx)
	if !bound && !site {
		return t.Handler.Handle(ctx, r)
	}
	has := t.has | keysOf(r)
	var add []slog.Attr
	if bound && has&hasTenant == 0 {
		add = append(add, slog.String(KeyTenant, id.String()))
	}
	if site && has&hasModule == 0 {
		add = append(add, slog.String(KeyModule, module))
	}
	if site && has&hasRoute == 0 {
		add = append(add, slog.String(KeyRoute, route))
	}
	if len(add) > 0 {
		r = r.Clone()
		r.AddAttrs(add...)
	}
	return t.Handler.Handle(ctx, r)
}

func keyBit(k string) uint8 {
	switch k {
	case KeyTenant:
		return hasTenant
	case KeyModule:
		return hasModule
	case KeyRoute:
		return hasRoute
	}
	return 0
}

func keysOf(r slog.Record) uint8 {
	var has uint8
	r.Attrs(func(a slog.Attr) bool {
		has |= keyBit(a.Key)
		return true
	})
	return has
}

func (t tenantHandler) WithAttrs(as []slog.Attr) slog.Handler {
	has := t.has
	for _, a := range as {
		has |= keyBit(a.Key)
	}
	return tenantHandler{Handler: t.Handler.WithAttrs(as), has: has}
}

// WithGroup keeps has: a key the logger names stays named once.
func (t tenantHandler) WithGroup(name string) slog.Handler {
	return tenantHandler{Handler: t.Handler.WithGroup(name), has: t.has}
}
