package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/migrate"
)

// SQLSTATEs of a missing schema or table.
const (
	stateInvalidSchemaName = "3F000"
	stateUndefinedTable    = "42P01"
)

// notProvisioned turns a missing schema or table on a route whose
// containers are the tenant's own (a per-tenant schema, or the tenant's
// database on a routed client) into tenant_not_provisioned, which says what
// to call. It reads the error the call already has: no extra round trip.
// A static table missing on a plain client is a deployment fault, not a
// tenant's, and keeps the driver's error.
// Every call defers it: a call without an error allocates nothing here.
func (r route) notProvisioned(errp *error) {
	if *errp != nil {
		r.provisionedErr(errp)
	}
}

func (r route) provisionedErr(errp *error) {
	var pe *pgconn.PgError
	if !errors.As(*errp, &pe) || (pe.Code != stateInvalidSchemaName && pe.Code != stateUndefinedTable) {
		return
	}
	if r.c.routed == nil && !r.perTenant() {
		return
	}
	*errp = migrate.NotProvisioned(migrate.Unprovisioned{Module: r.c.module, Backend: rules.Name, Route: r.spec.name,
		What: "schema or table", Cause: pe.Code + ": " + pe.Message, Creates: "its schema and tables"})
}
