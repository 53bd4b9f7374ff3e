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
