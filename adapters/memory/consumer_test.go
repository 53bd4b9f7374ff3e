package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A failing handler's error reaches OnError, naming the consumer, and the
// message is retried after Backoff: the memory consumer used to retry
// without a word.
func TestConsumerErrorsGoToOnError(t *testing.T) {
	errs := make(chan error, 16)
	handled := make(chan struct{}, 1)
	tries := 0
	var st *memory.Stream
	app := fx.New(fx.NopLogger,
		memory.Module("shop", memory.StreamRoute("events", memory.StreamConfig{TenantAware: true, Stream: naming.Shared("events")}),
			memory.Consume(memory.ConsumerConfig{Name: "indexer", Stream: "events",
				WorkerConfig: shards.WorkerConfig{Backoff: time.Millisecond, OnError: func(err error) { errs <- err },
					Tenants: func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{tenancytest.TenantA}, nil }},
				Handle: func(context.Context, memory.Message) error {
					if tries++; tries < 3 {
						return errors.New("index down")
					}
					handled <- struct{}{}
					return nil
				}})),
		fx.Populate(&st))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	if _, err := st.Append(tenancy.WithTenant(context.Background(), tenancytest.TenantA), []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-handled:
	case <-time.After(5 * time.Second):
		t.Fatal("the message was not retried")
	}
	if len(errs) != 2 {
		t.Fatalf("OnError got %d errors, want 2", len(errs))
	}
	if err := <-errs; !strings.Contains(err.Error(), "consumer indexer") || !strings.Contains(err.Error(), "index down") {
		t.Fatalf("OnError got %v", err)
	}
}
