// Package rebindallowed is a boundary named by -rebind.allow.
package rebindallowed

import (
	"context"

	"github.com/tenantwire/tenantwire/tenancy"
)

func job(id tenancy.ID) context.Context { return tenancy.WithTenant(context.Background(), id) }
