package neo4j

import (
	"errors"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/migrate"
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
	u := migrate.Unprovisioned{Module: r.core.module, Backend: rules.Name, Route: r.spec.name, Tenant: tenant,
		What: "database " + database, Untouched: true,
		Creates: "its database, by CREATE DATABASE on Neo4j Enterprise Edition"}
	if database == "" {
		u.What = "database (the one its credentials name)"
	}
	if !r.perTenantDB {
		// A routed tenant's database is its server's, not one Provision makes.
		u.Fix = "create the tenant's database on its server (the database its credentials name) before its first call, or correct the database its credentials name"
	}
	var ne *drv.Neo4jError
	errors.As(err, &ne) // missingDatabase found it
	u.Cause = ne.Code + ": " + ne.Msg
	return migrate.NotProvisioned(u)
}
