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

// A routed tenant's own database records the tenant it is provisioned
// for: an empty table named ownerPrefix + the tenant's hex digits in the
// module's static schema, the server's record of whose the database is,
// which every replica reads the same. The in-process claims keep two
// tenants off one database within a process; the record keeps a replica
// whose resolver maps a second tenant there from connecting to it (every
// new connection of the tenant's pool checks it) and from provisioning,
// exporting, importing into or tearing down the first one's data. It is
// a name in the catalog, not a row, so the check is one more column of
// the identity query and needs no table to exist.
const ownerPrefix = "tenantwire_owner_"

// ownerState is the SQLSTATE the owner check raises.
const ownerState = "TW001"

func ownerTableOf(tenant string) string {
	id, _ := tenancy.ParseID(tenant) // a tenant's own string: it parses
	return ownerPrefix + id.Hex()
}

// ownerDDL records tenant as its database's owner, or fails (ownerCheck)
// when the database records another.
func (c *Client) ownerDDL(tenant tenancy.ID) []string {
	return []string{c.ownerCheck(tenant), "CREATE TABLE IF NOT EXISTS " + pgx.Identifier{c.static, ownerTableOf(tenant.String())}.Sanitize() + " ()"}
}

// ownerCheck fails with ownerState when the tenant's database records
// another tenant as its owner; a database that records none passes (it
// was provisioned before the record existed, or not at all).
func (c *Client) ownerCheck(tenant tenancy.ID) string {
	return "DO $$ BEGIN IF " + otherOwner(c.static, tenant.String()) + " THEN RAISE EXCEPTION USING ERRCODE = '" + ownerState +
		"', MESSAGE = 'this database is provisioned for another tenant'; END IF; END $$"
}

// otherOwner is true when static holds another tenant's owner record: a
// catalog read, valid whatever tables exist.
func otherOwner(static, tenant string) string {
	return "EXISTS (SELECT FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = " + literal(static) +
		" AND c.relkind = 'r' AND pg_catalog.starts_with(c.relname, " + literal(ownerPrefix) + ") AND c.relname <> " + literal(ownerTableOf(tenant)) + ")"
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
	return foreignOwner(module, static, tenant)
}

// foreignOwner is the refusal of tenant on a database its server records
// as another tenant's.
func foreignOwner(module, static, tenant string) error {
	return &tenancy.Error{Code: tenancy.CodeDedicatedTargetShared, Module: module, Backend: rules.Name,
		Detail: fmt.Sprintf("the routed client is rated dedicated, but tenant %s resolves to a database its server records as another tenant's (a table %s%s* other than its own); nothing was read or written", tenant, static+".", ownerPrefix),
		Fix:    "make the credential resolver give each tenant its own database, on every replica"}
}
