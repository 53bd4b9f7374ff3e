package migrate

import (
	"fmt"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Unprovisioned is a call refused because its tenant's own container
// (schema, table, database, collection, topic) does not exist. Each
// backend knows what is missing and what the server said; NotProvisioned
// words it the same way for all of them.
type Unprovisioned struct {
	Module, Backend, Route string
	// Tenant is the call's tenant; zero when the backend does not have it
	// at hand ("the bound tenant").
	Tenant tenancy.ID
	// What is the missing container: "schema t_1", "topic orders.x".
	What string
	// Cause is what the server said, or "" (shown in parentheses).
	Cause string
	// Untouched says that nothing of the call was read or written.
	Untouched bool
	// Creates is what Provision creates for the tenant ("" leaves it
	// unsaid).
	Creates string
	// Fix replaces the fix when Provision is not what creates the container
	// (a routed tenant's database is made on its own server).
	Fix string
}

// NotProvisioned is the tenant_not_provisioned refusal of u: the
// container, why it may be missing, and the call that creates it.
func NotProvisioned(u Unprovisioned) error {
	who := "the bound tenant's"
	if !u.Tenant.IsZero() {
		who = "tenant " + u.Tenant.String() + "'s"
	}
	detail := who + " " + u.What + " does not exist"
	if u.Cause != "" {
		detail += " (" + u.Cause + ")"
	}
	detail += ": it was never provisioned, or was torn down"
	if u.Untouched {
		detail += "; nothing was read or written"
	}
	fix := u.Fix
	if fix == "" {
		creates := ""
		if u.Creates != "" {
			creates = " (" + u.Creates + ")"
		}
		fix = fmt.Sprintf(`call Provision(ctx, tenant) on the module's *migrate.Runner (name:"%s"), or Tenants.Provision, before the tenant's first call: it creates what the tenant's routes need%s and migrates it to the current version, and is idempotent, so an onboarding step or a startup hook may call ProvisionAll for every known tenant`, u.Module, creates)
	}
	return &tenancy.Error{Code: tenancy.CodeTenantNotProvisioned, Module: u.Module, Backend: u.Backend, Route: u.Route, Detail: detail, Fix: fix}
}
