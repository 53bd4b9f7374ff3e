package rebind

import (
	"context"

	"github.com/tenantwire/tenantwire/tenancy"
)

func pass(ctx context.Context) context.Context { return ctx }

func read(ctx context.Context) (tenancy.ID, bool) { return tenancy.FromContext(ctx) }

func escaped(ctx context.Context, id tenancy.ID) context.Context {
	//tenantvet:ignore rebind the job queue is our boundary: it verified the job's signed tenant
	return tenancy.WithTenant(ctx, id)
}
