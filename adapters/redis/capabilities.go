package redis

import (
	"github.com/tenantwire/tenantwire/capability"
)

// The shared operations each route type offers: a method renamed here, or
// there, fails the build.
var (
	_ capability.Counter     = (*Counter)(nil)
	_ capability.Idempotency = (*Idempotency)(nil)
)
