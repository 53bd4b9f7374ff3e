package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestOffboardVerifiesTheTenantsTopics: offboarding a tenant that
// produced to its per-tenant topic deletes the topic and the verifier's
// report says it checked it, found gone on the broker. A topic of the
// tenant created again after the teardown (by a module offboarded after
// it) fails Offboard with tenant_erasure_incomplete naming the topic; the
// tenant stays suspended.
func TestOffboardVerifiesTheTenantsTopics(t *testing.T) {
	s := newSpace(t)
	type planter struct{}
	var plant string
	var d struct {
		fx.In
		Tenants  *modules.Tenants
		Producer *kafka.Producer `name:"orders"`
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		kafka.Module("events", kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace), modules.AllowTeardown(),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders-"))})),
		kafka.Module("feed", kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.None), modules.AllowTeardown(),
			kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.Shared(s.name("audit"))})),
		fx.Provide(func() planter { return planter{} }),
		modules.ProvideTenantState(func(planter) modules.TenantState {
			return modules.TenantState{Module: "zz", Backend: "test", Offboard: func(ctx context.Context, _ tenancy.ID) error {
				if plant == "" {
					return nil
				}
				tr := &kafkago.Transport{}
				defer tr.CloseIdleConnections()
				cl := &kafkago.Client{Addr: kafkago.TCP(s.broker), Transport: tr, Timeout: 10 * time.Second}
				_, err := cl.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{{Topic: plant, NumPartitions: 1, ReplicationFactor: -1}}})
				return err
			}}
		}),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	for i, planted := range []bool{false, true} {
		id := newTenant(200 + i)
		ctx := tenancy.WithTenant(context.Background(), id)
		if _, err := d.Tenants.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if err := d.Producer.Produce(ctx, kafka.Message{Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
		topic := s.name("orders-") + id.Hex()
		if planted {
			plant = topic
		}
		rep, err := d.Tenants.Offboard(context.Background(), id)
		plant = ""
		var line, feed modules.StepReport
		for _, l := range rep {
			switch l.Module {
			case "events":
				line = l
			case "feed":
				feed = l
			}
		}
		if !planted {
			if err != nil || len(line.Checked) != 1 || line.Checked[0].Kind != "topic" || len(line.Left) != 0 {
				t.Fatalf("offboard: %v; report %+v", err, line)
			}
			if topicExists(t, s.broker, line.Checked[0].Where) {
				t.Fatalf("topic %s exists after offboarding", line.Checked[0].Where)
			}
			// The shared topic is not deleted; the report says its records
			// stay until retention, and the proof carries it.
			if len(line.Kept) != 0 || len(feed.Kept) != 1 || feed.Kept[0].Family.Where != s.name("audit") || feed.Kept[0].Family.Kind != "records-by-header" ||
				!strings.Contains(feed.Kept[0].Reason, "retention") {
				t.Fatalf("kept: %+v, %+v", line.Kept, feed.Kept)
			}
			if p := rep.Proof(id); !p.Erased || p.Check() != nil {
				t.Fatalf("proof: %+v", p)
			}
			continue
		}
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeTenantErasureIncomplete || te.Module != "events" || !strings.Contains(te.Detail, line.Checked[0].Where) {
			t.Fatalf("a topic created after the teardown: %v (report %+v)", err, line)
		}
		if !d.Tenants.Suspended(id) {
			t.Fatal("the tenant must stay suspended")
		}
		if _, err := d.Tenants.Offboard(context.Background(), id); err != nil {
			t.Fatalf("offboard again: %v", err)
		}
	}
}
