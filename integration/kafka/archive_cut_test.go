package kafka_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestArchiveImportCutKafka, on the broker: an import of A's records of
// its own topic (past one produce request of 500) into C cut on both
// sides of the request's end, then recovered as documented (offboard,
// which deletes C's topic, provision, rerun), leaves C's topic with
// exactly A's records, none lost and none twice. A shared topic is left
// out: its records cannot be deleted, so a cut import there is rerun
// into another tenant (docs/archive.md).
func TestArchiveImportCutKafka(t *testing.T) {
	s := newSpace(t)
	var d struct {
		fx.In
		Tenants *modules.Tenants
		Runner  *migrate.Runner `name:"events"`
		Orders  *kafka.Producer `name:"orders"`
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		kafka.Module("events", kafka.Brokers(s.broker), modules.AllowTeardown(),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("cut.")), Partitions: 1})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, d.Tenants, a, c)
	for _, id := range []tenancy.ID{a, c} {
		t.Cleanup(func() { _, _ = d.Tenants.Offboard(context.Background(), id) })
	}
	produceTagged(t, d.Orders, a, "cut", 510)
	archive := exportOf(t, d.Tenants, a)
	left := tenancytest.CheckImportCut(t, tenancytest.ImportCut{Tenants: d.Tenants, Import: d.Runner.Import, Module: "events", Target: c, Archive: archive,
		At: []int{0, 499, 500, 509}})
	if left == 0 {
		t.Errorf("no cut left a record behind: the import produces 500 at a time, so the cuts missed its writes")
	}
	t.Logf("%d of 4 cuts left records behind; each converged on the rerun", left)
}
