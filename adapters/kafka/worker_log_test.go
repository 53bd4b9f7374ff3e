package kafka_test

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/logcapture"
)

// A consumer whose broker is unreachable logs its failed fetches through
// the app's *slog.Logger with the keys every adapter's workers use:
// backend, module, route, worker, error.
func TestConsumerLogsThroughTheAppLogger(t *testing.T) {
	log, h := logcapture.New()
	app := fx.New(fx.NopLogger, fx.Supply(log),
		kafka.Module("m", kafka.Brokers(nowhere),
			kafka.Consumer("in", kafka.ConsumerConfig{
				Name: "in-consumer", Group: "g", Topic: "t",
				Handle: func(context.Context, kafkago.Message) error { return nil },
			})))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	rec, ok := h.Wait(10*time.Second, func(r logcapture.Record) bool { return r.Attrs["worker"] == "in-consumer" })
	if !ok {
		t.Fatal("the failing consumer logged nothing through the app's logger")
	}
	want := map[string]string{"backend": "kafka", "module": "m", "route": "in"}
	for k, v := range want {
		if rec.Attrs[k] != v {
			t.Errorf("%s = %q, want %q (record %+v)", k, rec.Attrs[k], v, rec)
		}
	}
	if rec.Attrs["error"] == "" {
		t.Errorf("no error key: %+v", rec)
	}
}
