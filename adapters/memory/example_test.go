package memory_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type Order struct {
	Item string
	Qty  int
}

// The quickstart: a namespace floor refuses a shared tenant-aware container
// (it reaches only tagged) during fx.New, and a container per tenant fixes
// it. Tenant B then sees nothing of tenant A's.
func Example() {
	refused := fx.New(fx.NopLogger,
		memory.Module("shop",
			modules.RequiredIsolation(tenancy.Namespace),
			memory.Document[Order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}),
		),
	)
	var coded *tenancy.Error
	if errors.As(refused.Err(), &coded) {
		fmt.Println("refused:", coded.Code)
		fmt.Printf("reached %s, required %s\n", coded.Reached, coded.Required)
		fmt.Println("fix:", coded.Fix)
	}

	var orders *memory.Documents[Order]
	app := fx.New(fx.NopLogger,
		memory.Module("shop",
			modules.RequiredIsolation(tenancy.Namespace),
			memory.Document[Order]("orders", memory.DocumentConfig{Read: naming.PerTenant("orders")}),
		),
		fx.Populate(&orders),
	)
	fmt.Println("fixed wiring accepted:", app.Err() == nil)

	asA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	asB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	if _, err := orders.Create(asA, "o-1", Order{Item: "anvil", Qty: 3}); err != nil {
		fmt.Println(err)
	}
	got, _ := orders.Get(asA, "o-1")
	fmt.Println("A reads:", got.Value.Item)
	_, err := orders.Get(asB, "o-1")
	fmt.Println("B reads:", errors.Is(err, document.ErrNotFound))
	_, err = orders.Get(context.Background(), "o-1")
	fmt.Println("no tenant:", tenancy.CodeOf(err))
	// Output:
	// refused: memory_tenancy_validation_failed
	// reached tagged, required namespace
	// fix: give a per-tenant resolver to every relation the route names (static now: read (orders), write (orders))
	// fixed wiring accepted: true
	// A reads: anvil
	// B reads: true
	// no tenant: tenant_unbound
}

// report is a testing.TB that prints the probe's failures, so the example
// runs outside a test. In a test, pass the test's *testing.T.
type report struct {
	testing.TB
	failed bool
}

func (r *report) Helper() {}
func (r *report) Errorf(format string, args ...any) {
	r.failed = true
	fmt.Printf("probe failed: "+format+"\n", args...)
}
func (r *report) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *report) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *report) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// tenancytest.Boundary writes under tenant A, proves A reads its own write,
// then reads, lists, counts, updates and deletes under tenant B, and fails
// the test if B sees or changes anything of A's.
func Example_boundary() {
	var orders *memory.Documents[Order]
	app := fx.New(fx.NopLogger,
		memory.Module("shop", memory.Document[Order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")})),
		fx.Populate(&orders),
	)
	if err := app.Err(); err != nil {
		fmt.Println(err)
		return
	}
	probe := tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := orders.Create(ctx, "o-1", Order{Item: "anvil"}); return err },
		Read: func(ctx context.Context) (bool, error) {
			_, err := orders.Get(ctx, "o-1")
			if errors.Is(err, document.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		RecordID: "o-1",
		List: func(ctx context.Context) ([]string, error) {
			recs, err := orders.List(ctx, document.Query{})
			ids := make([]string, len(recs))
			for i, r := range recs {
				ids[i] = r.ID
			}
			return ids, err
		},
		Count: func(ctx context.Context) (int, error) { return orders.Count(ctx, document.Query{}) },
		Update: func(ctx context.Context) error {
			_, err := orders.Update(ctx, "o-1", Order{Item: "hammer"}, 1)
			return err
		},
		Delete: func(ctx context.Context) error { return orders.Delete(ctx, "o-1") },
	}
	r := &report{}
	done := make(chan struct{})
	go func() { // Fatalf ends the probe's goroutine, as it ends a test's
		defer close(done)
		tenancytest.Boundary(r, probe)
	}()
	<-done
	fmt.Println("boundary holds:", !r.failed)
	// Output:
	// boundary holds: true
}
