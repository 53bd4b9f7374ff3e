package postgres_test

import (
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/logcapture"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A failing sweep logs through the app's *slog.Logger with the keys every
// adapter's workers use: backend, module, route, worker, tenant, error.
func TestSweepLogsThroughTheAppLogger(t *testing.T) {
	url := testsvc.PostgresURL(t)
	log, h := logcapture.New()
	// The table is never provisioned, so every pass fails.
	app, _ := build(t, postgres.Module("pg", postgres.Connect(url),
		postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: true, Table: naming.Shared("sw_missing_" + unique())}),
		postgres.Sweep("idem", postgres.SweepConfig{Every: 20 * time.Millisecond, WorkerConfig: shards.WorkerConfig{Tenants: providing(tenancytest.TenantA)}}),
	), fx.Supply(log))
	startApp(t, app)
	rec, ok := h.Wait(5*time.Second, func(r logcapture.Record) bool { return r.Attrs["worker"] == "idem-sweep" })
	if !ok {
		t.Fatal("the failing sweep logged nothing through the app's logger")
	}
	want := map[string]string{"backend": "postgres", "module": "pg", "route": "idem", "tenant": tenancytest.TenantA.String()}
	for k, v := range want {
		if rec.Attrs[k] != v {
			t.Errorf("%s = %q, want %q (record %+v)", k, rec.Attrs[k], v, rec)
		}
	}
	if rec.Attrs["error"] == "" {
		t.Errorf("no error key: %+v", rec)
	}
}
