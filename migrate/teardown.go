package migrate

import (
	"errors"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ErrTeardownDisabled is what a module's teardown returns unless the module
// was built with its backend's AllowTeardown option: removing a tenant's
// data is never a default.
var ErrTeardownDisabled = errors.New("teardown is disabled (build the module with AllowTeardown)")

// CheckTeardown is what every teardown checks first: that the module
// allows it, and that a tenant is named (never the zero tenant, which
// would name every tenant's shared containers).
func CheckTeardown(allowed bool, tenant tenancy.ID) error {
	if !allowed {
		return ErrTeardownDisabled
	}
	if tenant.IsZero() {
		return tenancy.Unbound()
	}
	return nil
}
