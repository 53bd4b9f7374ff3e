package redis_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/logcapture"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A failing trim sweep logs through the app's *slog.Logger with the keys
// every adapter's workers use: backend, module, route, worker, tenant,
// error. The tenant has no credentials, so every pass fails.
func TestTrimLogsThroughTheAppLogger(t *testing.T) {
	e := newEnv(t)
	log, h := logcapture.New()
	name := e.name("trimlog")
	app := fx.New(fx.NopLogger, fx.Supply(log),
		redis.Module("w", e.routed(),
			redis.StreamRoute(name, redis.RouteConfig{}),
			redis.StreamTrim(name, redis.TrimConfig{
				MaxLen: 10, Every: 20 * time.Millisecond,
				WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{tenantNoCreds}, nil }},
			})))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	rec, ok := h.Wait(5*time.Second, func(r logcapture.Record) bool { return r.Attrs["worker"] == name+"-trim" })
	if !ok {
		t.Fatal("the failing trim logged nothing through the app's logger")
	}
	want := map[string]string{"backend": "redis", "module": "w", "route": name, "tenant": tenantNoCreds.String()}
	for k, v := range want {
		if rec.Attrs[k] != v {
			t.Errorf("%s = %q, want %q (record %+v)", k, rec.Attrs[k], v, rec)
		}
	}
	if rec.Attrs["error"] == "" {
		t.Errorf("no error key: %+v", rec)
	}
}
