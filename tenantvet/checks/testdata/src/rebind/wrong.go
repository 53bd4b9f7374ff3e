package rebind

import (
	"context"
	"net/http"

	"github.com/tenantwire/tenantwire/tenancy"
)

func handler(w http.ResponseWriter, r *http.Request) {
	id, _ := tenancy.ParseID(r.Header.Get("X-Tenant"))
	ctx := tenancy.WithTenant(r.Context(), id) // want `rebind: tenancy.WithTenant outside a boundary: the boundary that authenticated the request binds its tenant \(tenanthttp, tenantgrpc, a tenantwire worker\), and a tenant bound from request data is one the caller chose; pass the incoming ctx on, or add rebind to -rebind.allow if it is a boundary`
	_ = ctx
}

func global(ctx context.Context) context.Context {
	bind := tenancy.WithGlobal
	_ = bind
	return tenancy.WithGlobal(ctx) // want `rebind: tenancy.WithGlobal outside a boundary`
}

func reasonless(ctx context.Context, id tenancy.ID) context.Context {
	//tenantvet:ignore rebind // want `rebind: //tenantvet:ignore rebind needs a reason`
	return tenancy.WithTenant(ctx, id) // want `rebind: tenancy.WithTenant outside a boundary`
}
