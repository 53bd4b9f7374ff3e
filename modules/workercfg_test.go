package modules_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type nopDest struct{}

func (nopDest) Deliver(context.Context, outbox.Message) error { return nil }

// workerCase wires one worker of every backend with wc as its
// WorkerConfig, in module module, named worker.
type workerCase struct {
	module, worker, config string
	wire                   func(wc shards.WorkerConfig) fx.Option
}

func workerCases() []workerCase {
	const pg = "postgres://nobody@127.0.0.1:1/none?sslmode=disable"
	ob := postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("out")})
	return []workerCase{
		{"pg", "r", "postgres.RelayConfig", func(wc shards.WorkerConfig) fx.Option {
			return postgres.Module("pg", postgres.Connect(pg), ob,
				postgres.Relay("out", postgres.RelayConfig{Name: "r", Destination: nopDest{}, WorkerConfig: wc}))
		}},
		{"pg", "s", "postgres.SweepConfig", func(wc shards.WorkerConfig) fx.Option {
			return postgres.Module("pg", postgres.Connect(pg), ob, postgres.Sweep("out", postgres.SweepConfig{Name: "s", WorkerConfig: wc}))
		}},
		{"mg", "r", "outbox.RelayConfig", func(wc shards.WorkerConfig) fx.Option {
			return mongo.Module("mg", mongo.Connect("mongodb://127.0.0.1:1"), mongo.Database("app"),
				mongo.OutboxRoute("out", mongo.RouteConfig{Collection: naming.Shared("out")}),
				mongo.Relay("out", outbox.RelayConfig{Name: "r", Destination: nopDest{}, WorkerConfig: wc}))
		}},
		{"kf", "c", "kafka.ConsumerConfig", func(wc shards.WorkerConfig) fx.Option {
			return kafka.Module("kf", kafka.Brokers("127.0.0.1:1"), kafka.Consumer("in", kafka.ConsumerConfig{
				Name: "c", Topic: naming.Shared("in"), Group: "g", WorkerConfig: wc,
				Handle: func(context.Context, kafkago.Message) error { return nil }}))
		}},
		{"rd", "c", "redis.ConsumerConfig", func(wc shards.WorkerConfig) fx.Option {
			return redis.Module("rd", redis.Connect(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}}), redis.StreamRoute("s", redis.RouteConfig{}),
				redis.StreamConsumer("s", redis.ConsumerConfig{Name: "c", Group: "g", WorkerConfig: wc,
					Handle: func(context.Context, redis.Entry) error { return nil }}))
		}},
		{"rd", "t", "redis.TrimConfig", func(wc shards.WorkerConfig) fx.Option {
			return redis.Module("rd", redis.Connect(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}}), redis.StreamRoute("s", redis.RouteConfig{}),
				redis.StreamTrim("s", redis.TrimConfig{Name: "t", MaxLen: 10, WorkerConfig: wc}))
		}},
		{"mem", "c", "memory.ConsumerConfig", func(wc shards.WorkerConfig) fx.Option {
			return memory.Module("mem", memory.StreamRoute("s", memory.StreamConfig{Stream: naming.Shared("s")}),
				memory.Consume(memory.ConsumerConfig{Name: "c", Stream: "s", WorkerConfig: wc,
					Handle: func(context.Context, memory.Message) error { return nil }}))
		}},
	}
}

// Every worker refuses a negative Refresh, Backoff or MaxBackoff the same
// way at fx.New: wiring_invalid naming its module, the worker and the
// field to fix, where it used to default some of them silently.
func TestEveryWorkerRefusesNegativeWorkerConfigAlike(t *testing.T) {
	bad := map[string]shards.WorkerConfig{
		"Refresh":    {Refresh: -time.Second},
		"Backoff":    {Backoff: -time.Millisecond},
		"MaxBackoff": {MaxBackoff: -1},
	}
	for _, c := range workerCases() {
		for field, wc := range bad {
			t.Run(c.config+"/"+field, func(t *testing.T) {
				e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, c.wire(wc))
				if e.Module != c.module || e.Backend == "" || e.Route == "" {
					t.Fatalf("refusal names module %q backend %q route %q, want module %q: %v", e.Module, e.Backend, e.Route, c.module, e)
				}
				want := "worker " + c.worker + ": " + field + " must not be negative"
				fix := "set " + c.config + "." + field + " to 0 (its default) or a positive duration"
				if !strings.Contains(e.Detail, want) || !strings.HasPrefix(e.Fix, fix) {
					t.Fatalf("refusal %q / %q, want detail %q and fix %q", e.Detail, e.Fix, want, fix)
				}
			})
		}
		t.Run(c.config+"/zero", func(t *testing.T) {
			tenancytest.RequireWires(t, c.wire(shards.WorkerConfig{}))
		})
	}
	if _, err := outbox.NewRelay(outbox.RelayConfig{Source: nopSource{}, Destination: nopDest{},
		WorkerConfig: shards.WorkerConfig{Refresh: -1}}); err == nil || !strings.Contains(err.Error(), "Refresh must not be negative") {
		t.Fatalf("outbox.NewRelay with a negative Refresh: %v", err)
	}
}

type nopSource struct{}

func (nopSource) Claim(context.Context, int) (outbox.Batch, error) { return nil, nil }

// Every worker's config embeds shards.WorkerConfig and declares none of its
// fields again, so every worker gets the same defaults from WithDefaults.
func TestEveryWorkerConfigEmbedsWorkerConfig(t *testing.T) {
	common := reflect.TypeFor[shards.WorkerConfig]()
	for _, typ := range []reflect.Type{
		reflect.TypeFor[outbox.RelayConfig](), reflect.TypeFor[postgres.SweepConfig](), reflect.TypeFor[kafka.ConsumerConfig](),
		reflect.TypeFor[redis.ConsumerConfig](), reflect.TypeFor[redis.TrimConfig](), reflect.TypeFor[memory.ConsumerConfig](),
		reflect.TypeFor[shards.Config](),
	} {
		f, ok := typ.FieldByName("WorkerConfig")
		if !ok || !f.Anonymous || f.Type != common {
			t.Fatalf("%s does not embed shards.WorkerConfig", typ)
		}
		for i := range common.NumField() {
			name := common.Field(i).Name
			if got, _ := typ.FieldByName(name); len(got.Index) != 2 {
				t.Fatalf("%s declares %s itself, beside shards.WorkerConfig's", typ, name)
			}
		}
		for _, old := range []string{"Retry", "MaxRetry", "Every"} {
			if _, ok := typ.FieldByName(old); ok && typ != reflect.TypeFor[postgres.SweepConfig]() && typ != reflect.TypeFor[redis.TrimConfig]() {
				t.Fatalf("%s still has %s", typ, old)
			}
		}
	}
	d := shards.WorkerConfig{}.WithDefaults()
	if d.Refresh != shards.DefaultEvery || d.Backoff != 200*time.Millisecond || d.MaxBackoff != 5*time.Second || d.Logger == nil {
		t.Fatalf("defaults %+v", d)
	}
	if kept := (shards.WorkerConfig{Backoff: time.Second, MaxBackoff: time.Millisecond}).WithDefaults(); kept.MaxBackoff != time.Second {
		t.Fatalf("MaxBackoff below Backoff: %v, want it raised to Backoff", kept.MaxBackoff)
	}
}
