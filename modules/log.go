package modules

import (
	"context"
	"log/slog"

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
func LogWorkerError(ctx context.Context, log *slog.Logger, msg string, err error) {
	if id, ok := tenancy.FromContext(ctx); ok {
		log.Warn(msg, KeyTenant, id.String(), KeyError, err)
		return
	}
	log.Warn(msg, KeyError, err)
}

// TenantHandler wraps h so that every record logged with a context that
// binds a tenant carries it under KeyTenant: a handler's or a worker's
// log line names the tenant without threading it through. A record that
// already names the tenant, or a context with none bound, passes as it
// is.
func TenantHandler(h slog.Handler) slog.Handler { return tenantHandler{h} }

type tenantHandler struct{ slog.Handler }

func (t tenantHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := tenancy.FromContext(ctx); ok && !hasTenant(r) {
		r = r.Clone()
		r.AddAttrs(slog.String(KeyTenant, id.String()))
	}
	return t.Handler.Handle(ctx, r)
}

func hasTenant(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == KeyTenant
		return !found
	})
	return found
}

func (t tenantHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return tenantHandler{t.Handler.WithAttrs(as)}
}

func (t tenantHandler) WithGroup(name string) slog.Handler {
	return tenantHandler{t.Handler.WithGroup(name)}
}
