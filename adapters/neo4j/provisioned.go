package neo4j

import (
	"errors"
	"fmt"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/tenancy"
)

// missingDatabase reports whether err is the server's DatabaseNotFound for
// a database that is tenant's own (a per-tenant database, or a routed
// tenant's). It reads the error the call already has: no extra round trip.
// A missing module database is a deployment fault, not a tenant's, and
// keeps the driver's error.
func (r *route) missingDatabase(err error, tenant tenancy.ID) bool {
	return err != nil && !tenant.IsZero() && (r.perTenantDB || r.core.routed()) && notFound(err)
}

// notProvisioned is tenant_not_provisioned for err, a missingDatabase
// error: what to create, and the server's code and message.
func (r *route) notProvisioned(err error, tenant tenancy.ID, database string) error {
	fix := "create the tenant's database on its server (the database its credentials name) before its first call, or correct the database its credentials name"
	if r.perTenantDB {
		fix = "call Provision(ctx, tenant) on the module's *migrate.Runner (name:\"<module>\"), or Tenants.Provision, before the tenant's first call: it creates the tenant's database (CREATE DATABASE, Neo4j Enterprise Edition) and migrates it; it is idempotent"
	}
	var ne *drv.Neo4jError
	errors.As(err, &ne) // missingDatabase found it
	if database == "" {
		database = "(the one its credentials name)"
	}
	return &tenancy.Error{
		Code: tenancy.CodeTenantNotProvisioned, Module: r.core.module, Backend: rules.Name, Route: r.spec.name,
		Detail: fmt.Sprintf("tenant %s's database %s does not exist: it was never provisioned, or was dropped; nothing was read or written (%s: %s)", tenant, database, ne.Code, ne.Msg),
		Fix:    fix,
	}
}
