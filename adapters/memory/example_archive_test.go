package memory_test

import (
	"bytes"
	"context"
	"fmt"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Export writes tenant A's data as one archive; Import restores it into
// another tenant, C, which then reads A's order. A second import into C,
// which now holds data, is refused.
func Example_archive() {
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Orders  *memory.Documents[Order]
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		memory.Module("shop", memory.Document[Order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")})),
		fx.Populate(&r))
	if err := app.Err(); err != nil {
		panic(err)
	}
	ctx := context.Background()
	a, c := tenancytest.TenantA, tenancytest.TenantB
	if _, err := r.Orders.Create(tenancy.WithTenant(ctx, a), "o1", Order{Item: "anvil", Qty: 2}); err != nil {
		panic(err)
	}
	var archive bytes.Buffer
	if err := r.Tenants.Export(ctx, a, &archive); err != nil {
		panic(err)
	}
	if err := r.Tenants.Import(ctx, c, bytes.NewReader(archive.Bytes())); err != nil {
		panic(err)
	}
	o, err := r.Orders.Get(tenancy.WithTenant(ctx, c), "o1")
	fmt.Println(o.Value.Item, o.Value.Qty, err)
	err = r.Tenants.Import(ctx, c, bytes.NewReader(archive.Bytes()))
	fmt.Println(tenancy.CodeOf(err))
	// Output:
	// anvil 2 <nil>
	// archive_target_not_empty
}
