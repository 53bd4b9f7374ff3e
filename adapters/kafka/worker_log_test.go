package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/logcapture"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// startLogged starts opts with log as the app's logger, after running
// before (if any), stopping it when the test ends.
func startLogged(t *testing.T, before func(), opts ...fx.Option) *logcapture.Handler {
	t.Helper()
	log, h := logcapture.New()
	app := fx.New(append([]fx.Option{fx.NopLogger, fx.Supply(log)}, opts...)...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before()
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return h
}

// requireKeys fails unless rec carries want; tenant "" means no tenant key.
func requireKeys(t *testing.T, rec logcapture.Record, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := rec.Attrs[k]
		if v == "" && ok {
			t.Errorf("%s = %q, want no such key (record %+v)", k, got, rec)
		}
		if v != "" && got != v {
			t.Errorf("%s = %q, want %q (record %+v)", k, got, v, rec)
		}
	}
	if rec.Attrs["error"] == "" {
		t.Errorf("no error key: %+v", rec)
	}
}

// A consumer whose broker is unreachable logs its failed fetches through
// the app's *slog.Logger with the keys every adapter's workers use:
// backend, module, route, worker, error; an unbound one names no tenant.
func TestConsumerLogsThroughTheAppLogger(t *testing.T) {
	h := startLogged(t, nil, kafka.Module("m", kafka.Brokers(nowhere),
		kafka.Consumer("in", kafka.ConsumerConfig{
			Name: "in-consumer", Group: "g", Topic: naming.Shared("t"),
			Handle: func(context.Context, kafkago.Message) error { return nil },
		})))
	rec, ok := h.Wait(10*time.Second, func(r logcapture.Record) bool { return r.Attrs["worker"] == "in-consumer" })
	if !ok {
		t.Fatal("the failing consumer logged nothing through the app's logger")
	}
	requireKeys(t, rec, map[string]string{"backend": "kafka", "module": "m", "route": "in", "tenant": ""})
}

// A sharded consumer's failures name the shard's tenant.
func TestShardedConsumerLogsItsTenant(t *testing.T) {
	h := startLogged(t, nil, kafka.Module("m", kafka.Brokers(nowhere),
		kafka.Consumer("in", kafka.ConsumerConfig{
			Name: "in-consumer", Group: "g", Topic: naming.PerTenant("t."), WorkerConfig: shards.WorkerConfig{Tenants: assigned},
			Handle: func(context.Context, kafkago.Message) error { return nil },
		})))
	rec, ok := h.Wait(10*time.Second, func(r logcapture.Record) bool { return r.Attrs["worker"] == "in-consumer" })
	if !ok {
		t.Fatal("the failing sharded consumer logged nothing")
	}
	requireKeys(t, rec, map[string]string{"backend": "kafka", "module": "m", "route": "in", "tenant": tenancytest.TenantA.String()})
}

// A header-bound consumer's failing handler is logged with the tenant the
// record's header names (real broker).
func TestHeaderConsumerLogsTheRecordsTenant(t *testing.T) {
	broker := testsvc.KafkaBrokers(t)
	topic := testTopic(t, broker, "log")
	var d struct {
		fx.In
		P    *kafka.Producer `name:"out"`
		Prov *migrate.Runner `name:"m"`
	}
	fail := errors.New("handler refused the record")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The topic exists before the reader joins its group: a reader
	// assigned no partition does not look again.
	provision := func() {
		if err := d.Prov.ProvisionShared(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h := startLogged(t, provision, kafka.Module("m", kafka.Brokers(broker),
		kafka.ProducerRoute("out", kafka.ProducerConfig{Topic: naming.Shared(topic)}),
		kafka.Consumer("in", kafka.ConsumerConfig{
			Name: "in-consumer", Group: topic, Topic: naming.Shared(topic), WorkerConfig: shards.WorkerConfig{Backoff: 50 * time.Millisecond},
			TenantFromHeaders: true,
			Handle:            func(context.Context, kafkago.Message) error { return fail },
			DeadLetter:        func(context.Context, kafkago.Message, error) error { return nil },
		})),
		fx.Populate(&d))
	if err := d.P.Produce(tenancy.WithTenant(ctx, tenancytest.TenantB), kafka.Message{Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	rec, ok := h.Wait(20*time.Second, func(r logcapture.Record) bool {
		return r.Attrs["worker"] == "in-consumer" && r.Attrs["tenant"] != ""
	})
	if !ok {
		t.Fatal("the failing handler was not logged with a tenant")
	}
	requireKeys(t, rec, map[string]string{"backend": "kafka", "module": "m", "route": "in", "tenant": tenancytest.TenantB.String()})
}

// testTopic is a topic name on broker that no other test or run uses; the
// topic, and a consumer group of the same name, are deleted when the test
// ends.
func testTopic(t *testing.T, broker, suffix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	topic := "tw-" + hex.EncodeToString(b[:]) + "-" + suffix
	t.Cleanup(func() {
		c := &kafkago.Client{Addr: kafkago.TCP(broker), Timeout: 10 * time.Second}
		_, _ = c.DeleteTopics(context.Background(), &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
		_, _ = c.DeleteGroups(context.Background(), &kafkago.DeleteGroupsRequest{GroupIDs: []string{topic}})
	})
	return topic
}
