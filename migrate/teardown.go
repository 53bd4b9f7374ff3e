package migrate

import "errors"

// ErrTeardownDisabled is what a module's teardown returns unless the module
// was built with its backend's AllowTeardown option: removing a tenant's
// data is never a default.
var ErrTeardownDisabled = errors.New("teardown is disabled (build the module with AllowTeardown)")
