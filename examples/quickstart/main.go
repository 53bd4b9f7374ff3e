// Command quickstart is the tenantwire demo on the embedded memory backend:
// two tenants write through the same routes, the live matrix is printed,
// and tenant B sees nothing of tenant A's data. It needs no server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Order is the value the document route stores.
type Order struct {
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

var (
	acme   = tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	globex = tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	var orders *memory.Documents[Order]
	var live modules.Live
	app := fx.New(
		fx.NopLogger, // fx's own "[Fx] ..." log stays quiet; fx.WithLogger sends it to slog instead
		memory.Module("shop",
			modules.RequiredIsolation(tenancy.Namespace),
			// A container per tenant on every relation: namespace. A shared
			// container with TenantAware would reach only tagged and be
			// refused under this floor (see examples/misconfigured).
			memory.Document[Order]("orders", memory.DocumentConfig{Read: naming.PerTenant("orders")}),
			memory.CacheRoute("sessions", memory.CacheConfig{Keys: naming.PerTenant("sessions")}),
		),
		fx.Populate(&orders, &live),
	)
	if err := app.Err(); err != nil {
		return err
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = app.Stop(ctx) }()

	fmt.Fprintln(w, "Live tenancy matrix:")
	if err := live.Matrix().WriteText(w); err != nil {
		return err
	}

	asAcme := tenancy.WithTenant(ctx, acme)
	asGlobex := tenancy.WithTenant(ctx, globex)
	if _, err := orders.Create(asAcme, "o-1", Order{Item: "anvil", Qty: 3}); err != nil {
		return err
	}
	got, err := orders.Get(asAcme, "o-1")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nacme reads its order o-1: %s x%d (version %d)\n", got.Value.Item, got.Value.Qty, got.Version)

	if _, err := orders.Get(asGlobex, "o-1"); !errors.Is(err, document.ErrNotFound) {
		return fmt.Errorf("globex read acme's order: %v", err)
	}
	fmt.Fprintln(w, "globex reads o-1: not found")
	list, err := orders.List(asGlobex, document.Query{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "globex lists orders: %d\n", len(list))
	if err := orders.Delete(asGlobex, "o-1"); !errors.Is(err, document.ErrNotFound) {
		return fmt.Errorf("globex deleted acme's order: %v", err)
	}
	fmt.Fprintln(w, "globex deletes o-1: not found, acme's order is untouched")

	if _, err := orders.Get(ctx, "o-1"); errors.Is(err, tenancy.CodeTenantUnbound) {
		fmt.Fprintln(w, "a call with no tenant bound fails closed:", tenancy.CodeOf(err))
	} else {
		return fmt.Errorf("an unbound read did not fail closed: %v", err)
	}
	return nil
}
