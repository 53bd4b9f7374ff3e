package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
// whose resolver maps a second tenant there from provisioning,
// exporting, importing into or tearing down the first one's data. It is
// a name in the catalog, not a row, so the check needs no table to
// exist. It is not read on every new connection (a fresh backend's
// first catalog read cost some 2.7 ms a connection, a quarter more on the
// routed churn pair): the owner setting is, where it could be made.
const ownerPrefix = "tenantwire_owner_"

// ownerState is the SQLSTATE the owner check raises.
const ownerState = "TW001"

func ownerTableOf(tenant tenancy.ID) string { return ownerPrefix + tenant.Hex() }

// ownerSetting is the database setting that records the owner too,
// where the provisioning user may set it (it owns the database): every
// session of the database starts with it, so each new connection of a
// tenant's pool reads it with the server's identity, at no cost, and a
// replica's pool for another tenant is refused before any statement.
const ownerSetting = "tenantwire.owner"

// ownerDDL records tenant as its database's owner, or fails (ownerCheck)
// when the database records another.
func (c *Client) ownerDDL(tenant tenancy.ID) []string {
	return []string{c.ownerCheck(tenant), "CREATE TABLE IF NOT EXISTS " + pgx.Identifier{c.static, ownerTableOf(tenant)}.Sanitize() + " ()",
		setOwnerSetting("SET " + ownerSetting + " = " + literal(tenant.String()))}
}

// resetOwner is the teardown's end of the owner setting.
func resetOwner() string { return setOwnerSetting("RESET " + ownerSetting) }

// setOwnerSetting alters the current database's setting, skipped where
// the user may not (then only the catalog record holds).
func setOwnerSetting(change string) string {
	return "DO $$ BEGIN EXECUTE pg_catalog.format('ALTER DATABASE %I " + strings.ReplaceAll(change, "'", "''") + "', pg_catalog.current_database()); " +
		"EXCEPTION WHEN insufficient_privilege THEN NULL; END $$"
}

// ownerFix is the fix of a tenant refused by a database's owner record.
const ownerFix = "make the credential resolver give each tenant its own database, on every replica; " +
	"to hand a database to a new tenant, empty it first: offboard the old tenant there " +
	"(by hand: drop its tables and ALTER DATABASE … RESET " + ownerSetting + ")"

// ownerParam is the Credentials param withOwner sets: the tenant a
// routed pool is opened for, which its connections' owner setting must
// name when it names one.
const ownerParam = "tenantwire.pool_tenant"

// withOwner is resolve with the tenant in its credentials' params. The
// param is part of the credentials' fingerprint, as a pool is one
// tenant's anyway.
func withOwner(resolve routing.Resolver) routing.Resolver {
	return withParam(resolve, ownerParam, tenancy.ID.String)
}

// ownerCheck fails with ownerState when the tenant's database records
// another tenant as its owner; a database that records none passes (it
// was provisioned before the record existed, or not at all). It reads
// the catalog only, so it holds whatever tables exist.
func (c *Client) ownerCheck(tenant tenancy.ID) string {
	return "DO $$ BEGIN IF EXISTS (SELECT FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = " + literal(c.static) +
		" AND c.relkind = 'r' AND pg_catalog.starts_with(c.relname, " + literal(ownerPrefix) + ") AND c.relname <> " + literal(ownerTableOf(tenant)) +
		") THEN RAISE EXCEPTION USING ERRCODE = '" + ownerState + "', MESSAGE = 'this database is provisioned for another tenant'; END IF; END $$"
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
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != ownerState {
		return err
	}
	return &tenancy.Error{Code: tenancy.CodeDedicatedTargetShared, Module: c.module, Backend: rules.Name,
		Detail: fmt.Sprintf("the routed client is rated dedicated, but tenant %s resolves to a database its server records as another tenant's (a table %s.%s* other than its own); nothing was read or written", tenant, c.static, ownerPrefix),
		Fix:    ownerFix}
}
