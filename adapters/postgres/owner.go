package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ownerTable, in the static schema of a routed tenant's own database,
// names the tenant that database is provisioned for: the server's record
// of whose it is, which every replica reads the same. The in-process
// claims keep two tenants off one database within a process; this keeps
// a replica whose resolver maps a second tenant there from connecting to
// it (every new connection of the tenant's pool checks it), and from
// provisioning, exporting, importing into or tearing down the first
// one's data.
const ownerTable = "tenantwire_tenant"

// ownerState is the SQLSTATE the owner check raises.
const ownerState = "TW001"

// ownerDDL records tenant as its database's owner, or fails (ownerCheck)
// when the database names another.
func (c *Client) ownerDDL(tenant tenancy.ID) []string {
	t := pgx.Identifier{c.static, ownerTable}.Sanitize()
	return []string{
		"CREATE TABLE IF NOT EXISTS " + t + " (tenant uuid PRIMARY KEY)",
		c.ownerCheck(tenant),
		"INSERT INTO " + t + " VALUES (" + literal(tenant.String()) + ") ON CONFLICT DO NOTHING",
	}
}

// ownerCheck fails with ownerState when the tenant's database records
// another tenant as its owner; a database that records none passes (it
// was provisioned before the record existed, or not at all).
func (c *Client) ownerCheck(tenant tenancy.ID) string { return ownerCheckIn(c.static, tenant.String()) }

func ownerCheckIn(static, tenant string) string {
	t := pgx.Identifier{static, ownerTable}.Sanitize()
	// Nested: PL/pgSQL plans the inner test only when the table exists.
	return "DO $$ BEGIN IF pg_catalog.to_regclass(" + literal(t) + ") IS NOT NULL THEN IF EXISTS (SELECT FROM " + t +
		" WHERE tenant <> " + literal(tenant) + "::uuid) THEN RAISE EXCEPTION USING ERRCODE = '" + ownerState +
		"', MESSAGE = 'this database is provisioned for another tenant'; END IF; END IF; END $$"
}

// ownerParam is the Credentials param withOwner sets: the tenant a
// routed pool is opened for, whose every new connection then checks the
// database's owner record (pinnedServer.check) before any statement.
const ownerParam = "tenantwire.tenant"

// withOwner is resolve with the tenant in its credentials' params, so
// each tenant's pool knows whose database it must reach. The param is
// part of the credentials' fingerprint, as a pool is one tenant's anyway.
func withOwner(resolve routing.Resolver) routing.Resolver {
	return func(ctx context.Context, tenant tenancy.ID) (routing.Credentials, error) {
		cr, err := resolve(ctx, tenant)
		if err != nil {
			return cr, err
		}
		params := make(map[string]string, len(cr.Params)+1)
		for k, v := range cr.Params {
			params[k] = v
		}
		params[ownerParam] = tenant.String()
		cr.Params = params
		return cr, nil
	}
}

// checkOwner runs ownerCheck in tx (a routed client only).
func (c *Client) checkOwner(ctx context.Context, tx pgx.Tx, tenant tenancy.ID) error {
	if c.routed == nil {
		return nil
	}
	_, err := tx.Exec(ctx, c.ownerCheck(tenant))
	return c.ownedElsewhere(tenant, err)
}

// ownedElsewhere is err as dedicated_target_shared when it is the owner
// check's.
func (c *Client) ownedElsewhere(tenant tenancy.ID, err error) error {
	return ownedElsewhereIn(c.module, c.static, tenant.String(), err)
}

func ownedElsewhereIn(module, static, tenant string, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != ownerState {
		return err
	}
	return &tenancy.Error{Code: tenancy.CodeDedicatedTargetShared, Module: module, Backend: rules.Name,
		Detail: fmt.Sprintf("the routed client is rated dedicated, but tenant %s resolves to a database its server records as another tenant's (%s.%s); nothing was read or written", tenant, static, ownerTable),
		Fix:    "make the credential resolver give each tenant its own database, on every replica"}
}
