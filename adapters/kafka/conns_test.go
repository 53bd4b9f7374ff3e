package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/connprobe"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// The worst case is MaxClients × MaxConnsPerClient (defaults 64 and 16);
// ConnBudget refuses more with the code every adapter uses.
func TestConnBudget(t *testing.T) {
	route := kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared("orders")})
	e := tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded, kafka.Module("m",
		kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 8}}), modules.ConnBudget(31), route))
	if e.Module != "m" || e.Backend != "kafka" || e.Fix == "" {
		t.Errorf("refusal fields: %+v", e)
	}
	tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded, kafka.Module("m",
		kafka.Routed(resolve, kafka.RoutedConfig{}), modules.ConnBudget(64*kafka.DefaultMaxConnsPerClient-1), route))

	var live modules.Live
	tenancytest.RequireWires(t, kafka.Module("m",
		kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 8}}), modules.ConnBudget(32), route),
		fx.Populate(&live))
	if rows := live.Matrix().Rows; len(rows) != 1 || rows[0].WorstCaseConns != 32 {
		t.Errorf("matrix worst case: %+v", rows)
	}
	// A shared client's connections are not counted: nothing to refuse.
	tenancytest.RequireWires(t, kafka.Module("m", kafka.Brokers(nowhere), modules.ConnBudget(1), route))
}

// produceBurst provisions a three-partition topic for tenant A on a routed
// client limited to maxConns, produces 100 records from 10 goroutines, and
// returns the most connections the client held open at once.
func produceBurst(t *testing.T, broker string, maxConns int) int {
	t.Helper()
	topic := testTopic(t, broker, "conns")
	var conns connprobe.Counter
	var d struct {
		fx.In
		P    *kafka.Producer `name:"orders"`
		Prov *migrate.Runner `name:"m"`
	}
	resolveA := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		if id != tenancytest.TenantA {
			return routing.Credentials{}, fmt.Errorf("no cluster for %s", id)
		}
		return routing.Credentials{Endpoint: broker}, nil
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("m", kafka.Routed(resolveA, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 1, MaxConnsPerClient: maxConns}, Dial: conns.DialContext}),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(topic), Partitions: 3})),
		fx.Populate(&d))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	ctx, cancel := context.WithTimeout(tenancy.WithTenant(context.Background(), tenancytest.TenantA), 60*time.Second)
	defer cancel()
	if err := d.Prov.Provision(ctx, tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 10 {
		wg.Go(func() {
			for i := range 10 {
				key := []byte(fmt.Sprintf("k-%d-%d", g, i))
				for {
					err := d.P.Produce(ctx, kafka.Message{Key: key, Value: key})
					if err == nil || ctx.Err() != nil {
						errs <- err
						break
					}
					t.Logf("retrying: %v", err)
					// A produce may wait out a full client; the record
					// must still arrive.
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	if conns.Peak() == 0 { // every dial counts one open connection
		t.Fatal("the routed client did not dial through RoutedConfig.Dial")
	}
	return int(conns.Peak())
}

// A routed client never holds more than MaxConnsPerClient connections open,
// counted by the dialer itself, while a burst that opens more without the
// limit still gets every record through (real broker).
func TestMaxConnsPerClientIsAHardLimit(t *testing.T) {
	broker := testsvc.KafkaBrokers(t)
	start := time.Now()
	peak := produceBurst(t, broker, 1000)
	t.Logf("unlimited: peak %d connections, %v", peak, time.Since(start))
	if peak <= 2 {
		t.Fatalf("without a limit the burst held at most %d connections: it cannot show a limit of 2", peak)
	}
	start = time.Now()
	peak = produceBurst(t, broker, 2)
	t.Logf("limit 2: peak %d connections, %v", peak, time.Since(start))
	if peak > 2 {
		t.Fatalf("a client limited to 2 connections held %d open at once", peak)
	}
}
