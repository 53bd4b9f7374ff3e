package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// BehindTransactionPooler declares that the module reaches PostgreSQL
// through a pooler in transaction mode (PgBouncer's pool_mode =
// transaction, and poolers like it): its DSN, its Pool's, or every routed
// tenant's. Such a pooler hands each transaction, and each statement run
// outside one, whichever server session is free, so nothing may be kept in
// a session from one to the next. The module then:
//
//   - runs its statements in pgx's QueryExecModeCacheDescribe instead of
//     the default QueryExecModeCacheStatement, whose named prepared
//     statements live in one server session (a DSN that names
//     default_query_exec_mode keeps it: cache_statement suits PgBouncer
//     1.21+ with max_prepared_statements); describe_exec, which binds in a
//     second round trip what the first parsed, is refused;
//   - refuses, with postgres_dynamic_read_pooled, a dynamic read on a
//     plain client without Login, whose fence needs server sessions that
//     serve one tenant each, and checks on every read that the pooler
//     logged in as the tenant's role (Login) or the tenant's credentials;
//   - resets a dynamic read's server session in the message that ends its
//     transaction, the last moment the session is its own;
//   - runs no ownership-gate listener (LISTEN holds a session): its gates
//     cache nothing and look every id up.
//
// Migrations and provisioning need nothing more: their locks are
// transaction-level. Detection is not attempted: a pooler answers as the
// server does. A pooler in session mode needs no option.
func BehindTransactionPooler() Option { return modules.Own(func(c *config) { c.pooled = true }) }

// pooledConfig readies a pool configuration parsed from dsn for a
// transaction pooler when pooled (see BehindTransactionPooler): pgx's
// default mode, which prepares named statements, becomes
// QueryExecModeCacheDescribe; a mode the DSN names is kept, except
// describe_exec.
func pooledConfig(pooled bool, cc *pgx.ConnConfig, dsn string) error {
	if !pooled {
		return nil
	}
	if cc.DefaultQueryExecMode == pgx.QueryExecModeDescribeExec {
		return errDescribeExecPooled
	}
	if pc, err := pgconn.ParseConfig(dsn); err == nil {
		if _, named := pc.RuntimeParams["default_query_exec_mode"]; named {
			return nil
		}
	}
	cc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	return nil
}

// errDescribeExecPooled: describe_exec parses in one round trip and binds
// the unnamed statement in the next, which a transaction pooler may send
// to another server session, where the unnamed statement is another
// client's.
var errDescribeExecPooled = fmt.Errorf("pgx's %s mode binds in a second round trip the statement its first parsed, which a transaction pooler may send to another server session", pgx.QueryExecModeDescribeExec)

// pooledLoginError is the refusal of a dynamic read whose server session
// is not the one its fence needs: the pooler logged in as user instead of
// want.
func (d *DynamicRead) pooledLoginError(user, want string) error {
	return &tenancy.Error{Code: CodeDynamicReadPooled, Module: d.c.module, Backend: rules.Name, Route: d.spec.name,
		Detail: fmt.Sprintf("the pooler logged in to PostgreSQL as %q, not as %q: its server sessions are not the tenant's own", user, want),
		Fix:    "let the pooler log in as each client's own user (no user= in its database entry, an auth_type other than any)"}
}
