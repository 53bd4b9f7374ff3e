package mongo

import (
	"github.com/tenantwire/tenantwire/capability"
	"github.com/tenantwire/tenantwire/outbox"
)

// The shared operations each route type offers: a method renamed here, or
// there, fails the build.
var (
	_ capability.Counter = (*Counter)(nil)
	_ capability.Search  = (*Search)(nil)
	_ outbox.Writer      = (*Outbox)(nil)
	_ outbox.Source      = (*Outbox)(nil)
)
