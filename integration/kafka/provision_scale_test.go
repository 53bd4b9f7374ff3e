package kafka_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioScaleKafkaProvision: under `make bench` only, ProvisionAll of
// 1,000 tenants' topics on the real broker, concurrency 8; prints
// "scale provision-kafka-namespace tenants=1000 per_sec=X". The topics are
// deleted afterwards.
func TestRatioScaleKafkaProvision(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	const n = 1000
	s := newSpace(t)
	var d struct {
		fx.In
		Provision *migrate.Runner `name:"events"`
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	ids := make([]tenancy.ID, n)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-d000-%012x", i+1))
	}
	rep, _ := d.Provision.ProvisionAll(context.Background(), ids, migrate.Options{Concurrency: 8})
	if rep.Done != n {
		t.Fatalf("provisioned %d of %d: %v", rep.Done, n, rep.Failures[:min(3, len(rep.Failures))])
	}
	fmt.Printf("scale provision-kafka-namespace tenants=%d per_sec=%.0f\n", n, rep.PerSecond())
}
