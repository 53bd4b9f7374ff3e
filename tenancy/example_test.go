package tenancy_test

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Every refusal is a *tenancy.Error: errors.As finds it through fx's
// wrapping, and errors.Is compares it to a code.
func ExampleError() {
	app := fx.New(fx.NopLogger,
		memory.Module("shop",
			modules.RequiredIsolation(tenancy.Namespace),
			memory.CacheRoute("sessions", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("sessions")}),
		),
	)
	var coded *tenancy.Error
	if errors.As(app.Err(), &coded) {
		fmt.Println("code:", coded.Code)
		fmt.Println("module:", coded.Module, "route:", coded.Route)
		fmt.Println("reached:", coded.Reached, "required:", coded.Required)
	}
	fmt.Println("is validation failure:", errors.Is(app.Err(), tenancy.ValidationFailed("memory")))
	fmt.Println("is capability mismatch:", errors.Is(app.Err(), tenancy.ErrCapabilityMismatch))
	// Output:
	// code: memory_tenancy_validation_failed
	// module: shop route: sessions
	// reached: tagged required: namespace
	// is validation failure: true
	// is capability mismatch: false
}

// Bind the tenant once at the boundary; adapters read it with Require,
// which fails closed with a coded error when none is bound.
func ExampleWithTenant() {
	id := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	got, err := tenancy.Require(tenancy.WithTenant(context.Background(), id))
	fmt.Println(got, err)
	_, err = tenancy.Require(context.Background())
	fmt.Println(tenancy.CodeOf(err))
	// Output:
	// 7c9e6679-7425-40de-944b-e07fc1f90ae7 <nil>
	// tenant_unbound
}
