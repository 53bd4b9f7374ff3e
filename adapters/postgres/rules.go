package postgres

import (
	"slices"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Route kinds of the PostgreSQL backend.
const (
	kindDocument        floors.Kind = "document"
	kindSearch          floors.Kind = "search"
	kindCounter         floors.Kind = "counter"
	kindAnalytics       floors.Kind = "analytics"
	kindDynamicRead     floors.Kind = "dynamic_read"
	kindOutbox          floors.Kind = "outbox"
	kindInbox           floors.Kind = "inbox"
	kindIdempotency     floors.Kind = "idempotency"
	kindHubSearch       floors.Kind = "hub_search"
	kindFederatedSearch floors.Kind = "federated_search"
	kindSQL             floors.Kind = "sql"
)

// Codes only the PostgreSQL backend raises, documented in rules.Codes.
const (
	// CodeDynamicReadUnconfined: a dynamic read lacks a per-tenant role.
	CodeDynamicReadUnconfined tenancy.Code = "postgres_dynamic_read_unconfined"
	// CodeDynamicReadWrote: a dynamic read's text wrote (rolled back).
	CodeDynamicReadWrote tenancy.Code = "postgres_dynamic_read_wrote"
	// CodeDynamicReadPooled: a dynamic read behind a transaction pooler
	// cannot have server sessions of the tenant's own.
	CodeDynamicReadPooled tenancy.Code = "postgres_dynamic_read_pooled"
	// CodeSQLUnconfined: a SQL route on a plain client has no login of
	// the tenant's own role.
	CodeSQLUnconfined tenancy.Code = "postgres_sql_unconfined"
	// CodeSQLSearchPathPooled: a SQL route on a routed client behind a
	// transaction pooler, which cannot keep the tenant's search path.
	CodeSQLSearchPathPooled tenancy.Code = "postgres_sql_search_path_pooled"
	// CodeUnitOfWorkEnded: a call carried the context of a unit of work
	// that had already committed or rolled back.
	CodeUnitOfWorkEnded tenancy.Code = "postgres_unit_of_work_ended"
	// CodeUnitOfWorkRefused: a call cannot join the unit of work its
	// context carries (another module's, a dynamic read, an outbox claim).
	CodeUnitOfWorkRefused tenancy.Code = "postgres_unit_of_work_refused"
	// CodeUnitOfWorkRolledBack: a transaction inside a unit failed while
	// the unit's function returned nil; the unit rolled back.
	CodeUnitOfWorkRolledBack tenancy.Code = "postgres_unit_of_work_rolled_back"
	// CodeRowSecurityOwner: the module's own user is under the row
	// security it provisioned, so it would not see every tenant's rows.
	CodeRowSecurityOwner tenancy.Code = "postgres_row_security_owner"
)

// Rules is what PostgreSQL can reach and which relations of each route kind
// count toward namespace. Enforcement, the matrix and the docs
// all read it; each call returns a fresh value, so no
// caller can change what the adapter enforces.
func Rules() floors.Backend {
	return floors.Backend{
		Name:    "postgres",
		Ceiling: tenancy.Dedicated,
		Kinds: map[floors.Kind]floors.KindRule{
			kindDocument: {
				Summary:   "typed documents stored as jsonb, with an optimistic version",
				Relations: []string{"read", "write", "history"},
				Note:      "a static history table keeps the route below namespace even with history off",
			},
			kindSearch: {
				Summary:   "full-text search over a heap table and its text index",
				Relations: []string{"read", "heap", "index"},
				Note:      "the index relation counts too",
			},
			kindCounter: {
				Summary:   "named integer counters",
				Relations: []string{"table"},
			},
			kindAnalytics: {
				Summary:   "named aggregate queries the adapter builds",
				Relations: []string{"source"},
			},
			kindDynamicRead: {
				Summary:   "runtime SQL from a trusted compiler, under a per-tenant role",
				Relations: []string{"schema"},
				Origin:    tenancy.Compiled,
				Note:      "origin compiled: needs namespace; also needs a per-tenant role unless routed",
			},
			kindSQL: {
				Summary:   "the service's own SQL over its own tables, under the tenant's role",
				Relations: []string{"schema"},
				Origin:    tenancy.Compiled,
				Note:      "origin declared per route (compiled: namespace, raw: dedicated); needs Login unless routed",
			},
			kindOutbox: {
				Summary:                           "transactional outbox drained by a relay",
				Relations:                         []string{"table"},
				ResolverCountsOnlyWhenTenantAware: true,
				Note:                              "the resolver gets the tenant only when tenant-aware",
			},
			kindInbox: {
				Summary:                           "deduplicating inbox of consumed messages",
				Relations:                         []string{"table"},
				ResolverCountsOnlyWhenTenantAware: true,
				Note:                              "the resolver gets the tenant only when tenant-aware",
			},
			kindIdempotency: {
				Summary:                           "idempotency keys and stored responses",
				Relations:                         []string{"table"},
				ResolverCountsOnlyWhenTenantAware: true,
				Note:                              "the resolver gets the tenant only when tenant-aware",
			},
			kindHubSearch: {
				Summary:        "search over one shared hub table",
				NeverNamespace: true,
				Note:           "never namespace: the hub is one table",
			},
			kindFederatedSearch: {
				Summary:                    "search across several hub legs",
				NeverNamespace:             true,
				TaggedNeedsScopedRelations: true,
				Note:                       "tagged only when tenant-aware and every leg is a scoped hub leg",
			},
		},
		Codes: slices.Clone(codes),
	}
}

// rules is the package's own copy, read on every call.
var rules = Rules()

// codes documents the codes only PostgreSQL raises; Rules hands out a copy.
var codes = []floors.CodeDoc{
	{Code: string(CodeDynamicReadUnconfined), When: "fx.New",
		Meaning: "A PostgreSQL dynamic-read route (compiled SQL) runs in a per-tenant schema but not under a per-tenant role. Schema-qualified compiled text could then name another tenant's schema: the schema is a name, the role is the boundary.",
		Fix:     "Set TenantRole on the dynamic read (the provisioner creates a role with usage on the tenant's own schema only, and each read runs under SET LOCAL ROLE), or run it on a routed client."},
	{Code: string(CodeDynamicReadWrote), When: "run time",
		Meaning: "The compiled text of a PostgreSQL dynamic read made its read-only transaction write: read-only mode does not refuse every write (large-object functions such as lo_from_bytea, for one). The route always rolls its transaction back, so nothing was kept; the call is refused so the caller does not take the result for a read.",
		Fix:     "Fix the compiler so it emits read-only SQL: no lo_* functions or other calls that write."},
	{Code: string(CodeDynamicReadPooled), When: "fx.New, run time",
		Meaning: "A PostgreSQL module declared BehindTransactionPooler has a dynamic read whose fence needs server sessions that serve one tenant each, which the pooler does not give. At fx.New: a dynamic read on a plain client without Login, whose sessions the pooler would hand to other tenants' reads and to the module's own statements between transactions. At run time: a Login read, or a login connection of a SQL route, found that the pooler logged in to PostgreSQL as another user than the tenant's role (a forced user in its database entry), so the session user is not the tenant; nothing of the text ran.",
		Fix:     "Set DynamicReadConfig.Login (each tenant's reads log in as its own role, and the pooler keeps server sessions per user), run the module on a routed client, or give the dynamic read a module that reaches PostgreSQL directly or through session pooling. At run time: let the pooler log in as each client's own user (no user= in its database entry, an auth_type other than any)."},
	{Code: string(CodeSQLUnconfined), When: "fx.New",
		Meaning: "A PostgreSQL SQL route (the service's own statements) is wired on a plain client without SQLConfig.Login. Its text would run as the module's own user, which can reach every tenant's schema: a schema-qualified name, a search_path change or a role switch in the text would leave the tenant's schema, and nothing on the server would stop it.",
		Fix:     "Set SQLConfig.Login (each tenant's statements then run on connections that log in as the tenant's own role, whose search path is its schema), or run the module on a routed client (the tenant's own database)."},
	{Code: string(CodeSQLSearchPathPooled), When: "fx.New",
		Meaning: "A PostgreSQL SQL route is wired on a routed client (dedicated) declared BehindTransactionPooler. The route's unqualified names resolve in the tenant's schema of its own database because each of the tenant's sessions logs in with that schema as its search path, a startup parameter; a transaction pooler refuses startup parameters it does not track, or drops them, and hands each transaction whichever server session is free, so the search path would not hold.",
		Fix:     "Reach the tenants' databases directly or through a session pooler (drop BehindTransactionPooler), or wire the SQL route at namespace (a plain client with SQLConfig.Login), whose search path the server sets for the tenant's role at every login."},
	{Code: string(CodeUnitOfWorkEnded), When: "run time",
		Meaning: "A call carried the context of a PostgreSQL unit of work (`(*postgres.Client).InTx`) after the unit had committed or rolled back: a goroutine started inside the unit's function that outlived it, or a context kept past it. Nothing ran: the call is not run on the finished transaction, nor silently outside it. A statement already running when the unit ends finishes first.",
		Fix:     "Make every call of the unit inside its function, and wait for the goroutines started there before it returns. For work after the unit, use a context from outside the unit's function."},
	{Code: string(CodeUnitOfWorkRefused), When: "run time",
		Meaning: "A call cannot join the PostgreSQL unit of work its context carries, and running it beside the unit would commit it apart from the unit's work (or let compiled text write), so it is refused: a route or InTx of another module (its own connection cannot join this module's transaction), a dynamic read (its compiled text keeps its own read-only transaction), or an outbox Claim (it holds a transaction of its own until Complete or Abandon).",
		Fix:     "Put the routes that must commit together in one module. To run a call apart from the unit on purpose, make it with a context from outside the unit's function, before or after the unit."},
	{Code: string(CodeUnitOfWorkRolledBack), When: "run time",
		Meaning: "A transaction opened inside a PostgreSQL unit of work failed (a nested InTx whose function returned an error or panicked, an Outbox.Write, Idempotency.Do or Inbox.Once that rolled back), and the unit's function then returned nil. Such a transaction joins the unit rather than holding a savepoint, so its partial work is in the unit: the unit rolled back rather than commit part of its work. The inner cause is in the detail and in the error chain.",
		Fix:     "Return the inner error from the unit's function, or handle it before the unit writes anything that depends on it."},
	{Code: string(CodeRowSecurityOwner), When: "provisioning",
		Meaning: "A PostgreSQL module with RowSecurity provisioned a tenant, and the server reports that the module's own user is under the row-level security of a guarded table: it is neither the table's owner nor a superuser nor BYPASSRLS. The module's teardown, erasure check and export run as that user with no tenant set, so they would see none of the table's rows and could report a tenant erased whose rows are left.",
		Fix:     "Connect the module as the owner of its tables (the user that provisions them), or give that user BYPASSRLS. The routes' calls run as the module's row-security role whatever the user is."},
}
