package floors

import (
	"fmt"
	"io"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// CodeDoc explains one error code: the source of docs/errors.md and of
// `tenantwire explain`.
type CodeDoc struct {
	Code    string
	When    string // when it is raised: at fx.New, at run time, at the HTTP boundary
	Meaning string
	Fix     string
}

// validationPattern stands for every "<backend>_tenancy_validation_failed".
const validationPattern = "<backend>_tenancy_validation_failed"

// CodeDocs lists every code shared by the backends. A code only one
// backend raises is documented in that backend's Backend.Codes.
var CodeDocs = []CodeDoc{
	{string(tenancy.CodeStatementOriginFloor), "fx.New",
		"A route's statement origin needs a stronger tier than the route reaches: compiled text (written per request by a compiler) needs namespace, raw text (an engine string nothing can verify) needs dedicated. Verification raises confidence in a claim; it does not create a boundary. No declaration lowers an origin floor, and when the declared floor also fails, this is the error reported.",
		"Give every relation of the route a per-tenant resolver (namespace) or run it on a routed client (dedicated). For a raw hatch, only a routed client clears the floor; otherwise switch the hatch off."},
	{string(tenancy.CodeStatementOriginUnknown), "fx.New, or when parsing",
		"A route declares, or a config names, a statement origin that is none of structured, compiled or raw. An origin nobody can name has no floor, so it is refused rather than defaulted.",
		"Declare structured, compiled or raw."},
	{validationPattern, "fx.New",
		"A route of the module reaches a tier below the module's declared RequiredIsolation, or a route of a kind with no tagged tier (a Kafka topic has no row filter) is marked tenant-aware. When the declared floor is above the backend's ceiling, the same code is raised once for the module as a capability mismatch: `errors.Is(err, tenancy.ErrCapabilityMismatch)` tells the two apart.",
		"Wiring gap: add what the message names (TenantAware for tagged, a per-tenant resolver on every relation the route names for namespace, a routed client for dedicated). Capability mismatch: lower the floor to the backend's ceiling, or move the module to a backend that can reach it."},
	{string(tenancy.CodeTenantGlobalRequired), "fx.New",
		"A background worker (relay, consumer, sweep, scheduler, or one you registered) would read a tenant-aware resource, per-tenant containers, or a routed client with no tenant bound. A worker that drains everything unbound would mix tenants. The error reports reached=none (an unbound pass isolates nothing) and required=the route's tier, which a pass reaches only with a tenant bound.",
		"Run the worker sharded: set Tenants in the relay's, consumer's or sweep's config, which runs one pass per assigned tenant with that tenant bound. Or keep the drained route tenant-global by dropping TenantAware, the per-tenant resolver and the routed client from it (the default outbox, whose relay binds each row's tenant)."},
	{string(tenancy.CodeFleetTenantScoped), "fx.New",
		"A fleet route (replica heartbeats from lifecycle hooks, no tenant bound) is tenant-aware, resolves per tenant, or sits on a routed client.",
		"Drop TenantAware, the per-tenant resolver and the routed client from the fleet route. Fleet state is deployment-wide; never put tenant data there."},
	{string(tenancy.CodeGlobalTenantScoped), "fx.New",
		"A lock or pub/sub route marked TenantGlobal (a leader lock, an outbox wake) is also tenant-scoped.",
		"Either keep it tenant-global and drop the tenant-scoping, or drop TenantGlobal and bind a tenant when using it."},
	{string(tenancy.CodeTenantUnbound), "run time",
		"A tenant-scoped call ran with no tenant bound in its context (or in the explicit tenant-global scope). It never falls back to the default tenant or to all tenants. The same holds for an outgoing call to another service through `tenanthttp.Transport` or tenantgrpc's client interceptors: with no tenant bound and no tenant-global marker it is refused before anything is sent (a gRPC caller sees `FailedPrecondition`).",
		"Bind the tenant once at the boundary: the HTTP middleware, the gRPC interceptors, tenancy.WithTenant, or the sharded worker that binds the tenant it was assigned. Make outgoing calls under the handler's own context; mark a deployment-wide call with tenancy.WithGlobal (or tenantgrpc.Global() for one gRPC call)."},
	{string(tenancy.CodeTrustedProxyRequired), "fx.New",
		"Tenant resolution from a request header, the Host label or a gRPC metadata key is configured without asserting a trusted proxy. The header and the key are unauthenticated: any client could name any tenant.",
		"Deploy behind a proxy that sets the header (or metadata key) and strips the client's, and assert it in the HTTP or gRPC module's config (`TrustedProxy`); or resolve the tenant from an authenticated claim only."},
	{string(tenancy.CodeRouteUnclassified), "fx.New",
		"An HTTP route, or a method or stream of a gRPC service, was registered without a surface class (tenant, operator or blocked). A gRPC method added to a service's descriptor later is refused the same way until it is classified.",
		"Classify every route, and every method of every gRPC service (the service's class, or a `tenantgrpc.Method` entry). Operator surfaces are served only on the operator listener."},
	{string(tenancy.CodeInvalidTenantHeader), "HTTP request, gRPC call",
		"The tenant header (or gRPC metadata key) is present and not blank, but not a canonical 8-4-4-4-12 hex UUID, or it is present twice. The request is answered `400 {\"error\":\"invalid tenant header (must be a UUID)\",\"code\":\"invalid_tenant_header\"}`; a gRPC call `InvalidArgument` with an ErrorInfo naming this code.",
		"Send one canonical UUID, or omit the header to use the default tenant."},
	{string(tenancy.CodeWorkerRouteUnknown), "fx.New",
		"A worker was registered against a module and route that no module in the app declares, so nothing can check what it drains.",
		"Register the worker against a route of a module that the app includes; check the module and route names."},
	{string(tenancy.CodeWiringInvalid), "fx.New",
		"A route's wiring cannot be rated: its kind is not declared by its backend, or it claims a tier the backend cannot reach.",
		"Build routes with the backend package's own constructors."},
	{string(tenancy.CodeConnectionBudgetExceeded), "fx.New; a routed Redis call",
		"The module declares a connection budget, and its clients can open more connections in the worst case (routed pool bound × per-pool maximum, × nodes per client for Redis clusters). A routed Redis module with a budget and no RoutedConfig.ClusterNodes counted one node per client, so a tenant whose endpoint is a cluster is refused at its call, before any client is built.",
		"Lower the routed pool bound or the per-pool maximum connections, or raise the budget; for tenants on Redis clusters set redis.RoutedConfig.ClusterNodes."},
	{string(tenancy.CodeConnectionBudgetExhausted), "run time",
		"A routed client (PostgreSQL, Redis, MongoDB, Kafka, Neo4j) may hold at most its pool bound of clients at once, counting retired clients that are still draining or closing, so the connection budget is a hard limit. Opening a client for one more tenant waits for a slot (the least recently used client is retired to free one), bounded by the caller's context and the routed wait bound; this code is returned when no slot freed up in time. A caller that holds one tenant's client while acquiring another's can wait on itself: it gets this error, not a hang. A routed Redis cluster client holds connections on at most RoutedConfig.ClusterNodes nodes at once; a connection to one more node is refused with this code.",
		"Raise the routed pool bound (and the connection budget with it), keep calls short so retired clients drain, and release a tenant's client before acquiring another tenant's; for a Redis cluster, set redis.RoutedConfig.ClusterNodes to the cluster's node count."},
	{string(tenancy.CodeDedicatedTargetShared), "run time",
		"A routed client is rated dedicated, and the tenant bound to the call resolves to a data target that another tenant already uses in this process. Two checks decide it. First the names in the credentials, normalised (each host of a host list, IP address forms, case, default ports, PostgreSQL's default database): a match is refused before anything is opened. Then what the server reports once the tenant's new client has connected: PostgreSQL's cluster system identifier and database, Kafka's cluster id, Neo4j's database id, a MongoDB database's identity document; a match is refused before anything of either tenant is read or written, and a PostgreSQL pool that later connects to another server database than its first is refused that connection. The first tenant to use a target keeps it for the life of the process (eviction does not release it) until its own credentials move it to another target. Detection is per process, with one exception: a PostgreSQL tenant's own database records the tenant it was provisioned for (a table `tenantwire_owner_<tenant hex>` in its static schema), and sets the database's `tenantwire.owner` where the provisioning user owns it: on any replica, every new connection of another tenant's pool there is refused by the setting, and its provisioning, export, import or teardown by the record. Elsewhere, across replicas, the resolver itself must map tenants to distinct targets.",
		"Make the credential resolver give each tenant its own database (or cluster), or lower the floor and run the module on a plain client with the namespace or tagged tier."},
	{string(tenancy.CodeTenantNotProvisioned), "run time",
		"A call on a route with a per-tenant schema (namespace) or a per-tenant database (dedicated) found the bound tenant's schema or table missing (PostgreSQL SQLSTATE 3F000 or 42P01): the tenant was never provisioned, or was torn down. On Kafka, a produce or outbox delivery to a per-tenant topic (or a routed tenant's topic) that the brokers do not have, or a sharded consumer's reader for such a topic (reported once per tenant; the shard starts consuming once the topic exists). The driver's message is kept in the detail. Nothing was read or written, and no topic was auto-created. On Neo4j, a call for a tenant whose own database does not exist (a per-tenant database never provisioned or dropped, or the database a routed tenant's credentials name), read from the server's DatabaseNotFound; a missing module database keeps the driver's error. On MongoDB, only under RequiredVersion: a tenant with no applied migration record whose own home collection (a collection or database per tenant, or on its routed server) does not exist; without RequiredVersion, or with only tagged routes, a missing collection is created by its first write and reads as empty, so nothing is reported. Under RequiredVersion this code comes before any version check: a tenant without containers is not reported behind at version 0. The default tenant is a tenant like any other: a single-tenant deployment provisions it too.",
		"Provision the tenant before its first call: the module's `*migrate.Runner` (`Provision(ctx, tenant)`; a `*postgres.Client` and a `*mongo.Provisioner` embed it) creates its schema, tables and roles, its collections and indexes, its topics (returning once the brokers serve them), or the databases of its Neo4j per-tenant database routes (`CREATE DATABASE`, Enterprise Edition; on a routed module, on the tenant's own server), then migrates it; `modules.Tenants.Provision` runs every module's step. All are idempotent, so an onboarding step or startup hook may call them for every known tenant (`tenancy.Default` included in a single-tenant deployment)."},
	{string(tenancy.CodeMigrationHistoryConflict), "migrate, provision",
		"The migrations recorded as applied to a container (a tenant's schema, a tenant's database, or the shared tables of tagged routes) do not match the module's migration set: an applied file's checksum differs (it was edited after it ran), an applied version is missing from the set (a file was removed or renamed), or a pending version is older than one already applied (a file was added out of order). Nothing is applied to that container; the other tenants of the run continue.",
		"Never edit or renumber a migration that has run anywhere: restore the original file and put the change in a new file with a version above every applied one. The error names the tenant, module and version."},
	{string(tenancy.CodeTenantMigrationBehind), "OnStart, run time",
		"A module declares the migration version its routes need (RequiredVersion, on PostgreSQL, MongoDB, Kafka and Neo4j modules), and tenants are behind it. At start, the app refuses to start when any registered tenant (or the shared tables or database of tagged routes) is behind, naming how many and the first few. At run time, a call for a tenant whose containers are behind is refused before it reaches them (a statement, a document call, a produce, a transaction), instead of failing later with a missing column or index. The version is the target's own record: the schema's or database's migration history, or, on Kafka, the newest step whose configuration the tenant's topics carry. The check reads it once per tenant and target and remembers it while current, so it costs no round trip per call.",
		"Run the module's migrations for every tenant (the service's migrate command, or the module's MigrateAll), then start again; a PostgreSQL tenant provisioned after the migrations were added is migrated by Provision."},
	{string(tenancy.CodeStaticNameInTenantSpace), "fx.New",
		"A container the wiring names statically, one every tenant shares, has the shape of a per-tenant name: a PostgreSQL static schema (StaticSchema) or registry schema ending in 32 lowercase hex digits, a MongoDB or Neo4j module database ending in '_' or '-' and 32 hex digits, a Kafka static topic ending in 32 hex digits or an unsharded consumer group ending in '.' and 32 hex digits. The tenant whose id those digits spell would take it for its own: on PostgreSQL its provisioning grants its confined reader role SELECT on the shared tables and its teardown drops them for every tenant; on Kafka its producer writes into the shared topic and its topic migrations rewrite the shared topic's configuration. Only the shape is checked, whatever the prefix, so a collision with another module's prefix on the same server is caught too. A custom resolver's names (a naming.Func) are not checked: it must never return a static name.",
		"Rename the static container so that it does not end in the tenant suffix (32 lowercase hex digits, after the backend's separator); keep per-tenant containers to the module's resolver."},
	{string(tenancy.CodeReservedName), "fx.New, run time",
		"A route names something the framework keeps for its own records: a name starting with `tenantwire`, in any letter case. At fx.New, a PostgreSQL relation or a MongoDB collection of that name (the migration history `tenantwire_migrations`, the tenant registry `tenantwire_tenants` and `tenantwire_tenant_versions`). At run time, a Neo4j graph call naming such a label or relationship type (the history's `TenantwireMigration` nodes), refused before any statement is sent. A route that could write these records could forge the version the start-up and run-time migration checks trust, or block later migrations.",
		"Rename the table, collection, label or relationship type so that it does not start with `tenantwire`. The history and the registry are read and written by the migrators and registries only."},
	{string(tenancy.CodeTenantSourceConflict), "HTTP request, gRPC call, outgoing call",
		"Two tenant sources of one request name different tenants: an authenticated claim and the tenant header (or gRPC metadata key), a claim and the host label, or the header and the host label. The request is refused with `403` and a JSON body naming this code (a gRPC call with `PermissionDenied`); it is never resolved to either tenant. An outgoing call whose tenant header or metadata key was set by hand to another tenant than the one bound (or on a tenant-global call) is refused the same way before it is sent.",
		"Send only the tenant the caller is entitled to, or drop the conflicting source (a stale header, a wrong host). On outgoing calls, do not set the tenant by hand: the transport or interceptor sets it from the context."},
	{string(tenancy.CodeTenantRequired), "HTTP request, gRPC call",
		"The HTTP or gRPC boundary is set to require a tenant (`RequireTenant`), and the request names none: no claim, no tenant header or metadata key (or a blank one), no host label that maps to a tenant. It is refused with `400` and a JSON body naming this code (a gRPC call with `InvalidArgument`) instead of running as the default tenant. A proxy that sets a header name other than the configured one shows up here, on every request, instead of putting every request in the default tenant.",
		"Send the tenant (the header or metadata key your proxy sets, a host that maps to a tenant, or an authenticated claim), or leave `RequireTenant` off to serve such requests as the default tenant."},
	{string(tenancy.CodeTenantSuspended), "run time",
		"The tenant bound to the call is suspended (`modules.Tenants.Suspend`, or being offboarded). Every route of every module of the app refuses its calls, reads and writes alike, from the call after the suspension on and without a restart; its data stays where it is, and sharded workers stop serving it once their tenant set leaves it out.",
		"Resume the tenant (`Tenants.Resume`, or `Tenants.Provision`) to serve it again; a request for a tenant that must stay suspended is answered as your service answers a disabled account."},
	{string(tenancy.CodeRouteInvalid), "fx.New",
		"An HTTP route registered through the module has a pattern net/http refuses, a nil handler, or conflicts with another route of the same class (including the built-in operator routes). A route that overlaps a route of another class is `route_class_overlap`. A gRPC service is refused when gRPC could not register it (its implementation does not implement the descriptor's handler type, or it has none while serving methods; the service is registered twice) or its classes cannot be read (a `Method` entry naming no method of the service, or naming one twice).",
		"Write the pattern as net/http's ServeMux takes it (`[METHOD ][HOST]/[PATH]`, wildcards as `{name}` or `{name...}`), set a non-nil handler, and give every route a pattern no other route of its class registers (the operator listener already serves `GET /healthz`, `GET /readyz` and `GET /tenancy/matrix`). For gRPC, pass the service's own implementation and descriptor once, and name methods as the descriptor does (`Get`, not `/pkg.Service/Get`)."},
	{string(tenancy.CodeTenantSourceInvalid), "fx.New",
		"A configured tenant source can never name a tenant: the tenant header name is not an HTTP token (a trailing space, a tab, a colon, any character outside RFC 9110's token set), or it is a header net/http consumes or a proxy drops before the handler runs (Host, Content-Length, Transfer-Encoding, Connection and the other hop-by-hop headers). No request could carry it, so every request would resolve to the default tenant and all tenants would share the default tenant's data. A gRPC metadata key is held to the same rule and to gRPC's: letters, digits, `-`, `_` and `.` only (gRPC lowercases letters), not a key the gRPC library sets itself (content-type, user-agent) or reserves (`grpc-...`), and not a binary key ending in `-bin`, whose values gRPC base64-decodes into bytes no proxy wrote as text. `tenanthttp.Transport` and tenantgrpc's client side refuse such a name on every outgoing call.",
		"Set the HTTP module's header name to the exact header your proxy sets (X-Tenant-ID by default), with no spaces or colon, or the gRPC module's key to the text key it sets (x-tenant-id by default); or switch header or metadata resolution off and resolve from an authenticated claim."},
	{string(tenancy.CodeTenantHostAmbiguous), "HTTP request",
		"Host mode is on and the request line carries an absolute-form target (`GET http://b.example.com/x`) or an authority-form one (CONNECT). net/http then takes the request's host from the target and discards the Host header, so the tenant label could come from the client's request line instead of the Host the proxy set. The two cannot be compared once the Host header is gone, so the request is refused with `400` and a JSON body naming this code, whatever the hosts.",
		"Have the proxy forward requests in origin form (`GET /x` with the tenant's host in the Host header), as HTTP/1.1 proxies normally do; clients talking to the service directly must not use proxy-style request lines."},
	{string(tenancy.CodeRouteClassOverlap), "fx.New",
		"A tenant route would answer requests that an operator or blocked route matches (or an operator route, requests a blocked route matches). Routes are compared by the requests they match under net/http's rules (methods, GET also answering HEAD, hosts, wildcards, {$}, trailing-slash subtrees), not by their text: `GET /debug/pprof/` under a blocked `/debug/`, `GET /admin/stats` beside an operator `/admin/{p}`, or a host pattern `x.example.com/` beside an operator `/metrics` would each win those requests on the tenant listener. A method-less catch-all such as `/` is allowed: the operator and blocked paths are more specific and keep answering 404 there.",
		"Move the tenant route out of the operator or blocked path (another path, or drop the method or host that makes it win), or reclassify one of the two routes."},
	{string(tenancy.CodeTenantScopeChanged), "run time",
		"An operation inside a transaction scope (a Neo4j transaction, a PostgreSQL unit of work) ran under a context bound to a different tenant than the one the scope pinned when it began. The scope's tenant, connection and database were fixed at the start, so the operation is refused before any statement rather than run against the wrong tenant's data or inside another tenant's transaction.",
		"Pass the scope's own context (or one derived from it) to every operation inside the transaction; start a separate transaction for another tenant."},
	{string(tenancy.CodeForeignTenant), "run time",
		"A write names a tenant other than the one bound to its context: an outbox message whose Tenant is another tenant's, or a document sent through a tenant-aware raw route whose tenant field holds another value. The row would be stored as another tenant's, so nothing is written.",
		"Write under a context bound to the row's own tenant, and leave the tenant out of the message or document: the route stamps the bound tenant itself."},
	{string(tenancy.CodeTenantAdminUnwired), "fx.New, tenantadmin.Run",
		"The operator surface for tenants (`tenantadmin.Module`) is in an app that cannot serve it: the app has no `modules.Lifecycle()` (so there are no steps to run and no suspensions), its `Config.Registry` is nil (so there are no tenants to list), or `Config.Off` names no endpoint. It is refused before any listener opens rather than failing at the first request.",
		"Add `modules.Lifecycle()` to the app and set `tenantadmin.Config.Registry` (`postgres.NewRegistry`, or `migrate.NewMemoryRegistry` filled from configuration); give the same registry to the modules (`modules.TenantRegistry`) so that provisioning and offboarding keep it."},
	{string(tenancy.CodeTenantIDInvalid), "operator request, tenantadmin.Run",
		"An operator endpoint or command names a tenant that is not a canonical 8-4-4-4-12 hex UUID (braces, a URN prefix, missing dashes and the nil UUID are refused too). Answered `400` with a JSON body naming this code; nothing runs.",
		"Name the tenant by its canonical UUID, as `GET /tenants` lists it."},
	{string(tenancy.CodeOffboardUnconfirmed), "operator request, tenantadmin.Run",
		"An offboard (which removes the tenant's data) was asked without confirming the tenant: the `confirm` parameter (the `--confirm` flag) is missing or names another tenant. Answered `400` with a JSON body naming this code; nothing is suspended or removed. A dry run needs no confirmation.",
		"Repeat the tenant's id as `confirm` (`POST /tenants/{id}/offboard?confirm={id}`, or `offboard <id> --confirm <id>`), after a dry run (`?dry_run=1`) has shown what would run."},
	{string(tenancy.CodeOperatorRequestInvalid), "operator request, tenantadmin.Run",
		"An operator request or command is malformed: a query string that does not parse whole (a `;`, a bad escape such as `%zz`, a pair with no `=`, an empty pair), a parameter given twice, a parameter the endpoint does not take or spelt otherwise (`DRY_RUN`, `dry-run`, `dry_run` on suspend or resume), a body that is not empty (or `{}` on a POST: parameters are read from the query string only, so one sent in a body is refused rather than ignored), a value it cannot read (any `dry_run` other than `1`, a `limit` that is not a number from 1 to 1000, an `after` that is not a tenant id), `dry_run=1` together with `confirm`, an unknown subcommand or a missing argument, or a provisioning dry run asked of a third-party backend whose lifecycle target cannot list what it would create (`migrate.ErrNoProvisionPlan`). It is refused rather than guessed at, so a dry run is never taken for a real one. Answered `400` with a JSON body naming this code; nothing runs.",
		"Give each parameter once, in the query string, spelt exactly: `dry_run=1` on provision and offboard, `confirm={id}` on offboard, `limit` from 1 to 1000 and `after` a tenant id on the list; send no body (or `{}`)."},
	{string(tenancy.CodeOperatorRequestForbidden), "operator request, tenantadmin.Run",
		"A request to the operator listener (`/healthz`, `/readyz`, `/metrics`, `/tenancy/matrix`, the `/tenants` endpoints, any route classified `tenanthttp.Operator`) came in a form a web page can make a browser send, or without the configured authentication, and was refused before any handler ran: its `Host` is none of `tenanthttp.Config.OperatorHosts` (by default localhost, 127.0.0.1 and [::1], with no port or the listener's own; a page that rebinds its own DNS name to 127.0.0.1 sends its own name), its `Origin` is another site's (or `null`), or its `Sec-Fetch-Site` is `cross-site` or `same-site`; on the `/tenants` endpoints, it lacks the `tenantadmin.Config.Token` bearer token or fails `Config.Authenticate`, or it is a POST whose `Content-Type` is not `application/json` (a form or `text/plain` post, which a page can send without a CORS preflight). Answered `403` with a JSON body naming this code; nothing runs.",
		"Send operator requests from a command, not a web page: `tenantadmin.Run` does it right; with curl, reach the listener by a configured name and add `-H 'Content-Type: application/json'` to every POST to `/tenants` (and the bearer token when one is set). To reach the listener by another name (a scraper using the pod IP, `ops.internal`), list it in `tenanthttp.Config.OperatorHosts`, and set `tenantadmin.Config.Token` or `Config.Authenticate` before exposing it beyond loopback."},
	{string(tenancy.CodeOperatorHostsInvalid), "fx.New",
		"An entry of `tenanthttp.Config.OperatorHosts`, the names the operator listener answers in a request's `Host`, is not a host name or `host:port` (a scheme, a path, a port that is not a number, an unclosed `[`): no request could match it as written. It is refused before any listener opens.",
		"List the names as a `Host` header carries them: `ops.internal`, `ops.internal:443`, `10.0.0.5`, `[::1]`."},
	{string(tenancy.CodeTenantStepFailed), "operator request, tenantadmin.Run",
		"A lifecycle step ran and at least one module failed its part. Answered `409` (the step's outcome, not a fault of the surface) with the per-module report (module, backend, ok, error, code, skipped); every failing line names a code, its module's own or this one when the module's error carries none (a routed module's resolver that does not know the tenant, in an app whose modules serve different tenants). Provisioning and teardown are idempotent: a failed provision leaves the tenant not made active, a failed offboard leaves it suspended.",
		"Read the failing lines of the report, fix their cause (a server down, a module built without `AllowTeardown`), and run the step again."},
	{string(tenancy.CodeTenantRegistryUnavailable), "operator request, tenantadmin.Run",
		"The tenant registry behind `GET /tenants` or `GET /tenants/{id}` could not be read (its server is down or refused the query). Answered `503`; nothing was changed.",
		"Check the registry's server and retry."},
	{string(tenancy.CodeTenantDrainTimeout), "Tenants.Offboard, Tenants.OffboardAll",
		"An offboard suspended the tenant and then waited for the tenant's calls that had begun before (an open unit of work, an `Idempotency.Do` whose function is running, a relay's delivery) to end, so that none of them could write after the teardown; the offboard's context ended first. The tenant stays suspended (every new call is refused with `tenant_suspended`) and no module removed anything.",
		"Give the offboard a longer deadline, or end the long call (its context), and run the offboard again: it completes then."},
	{string(tenancy.CodeTenantErasureIncomplete), "Tenants.Offboard",
		"After every module's teardown, each module's verifier scanned on its server every family of data it declares for the tenant (the same list its teardown walks: Redis key families, PostgreSQL rows, schemas, roles and outbox tables, Mongo collections, Kafka topics, Neo4j nodes) and found some of the tenant's data left. The error and the report's line name the module, the family, where it looked and a sample. The tenant stays suspended.",
		"If a writer the teardown does not know wrote the data, declare its family in the backend's inventory, so that teardown and verifier both walk it. If a call wrote after the teardown (a replica that had not read the suspension: use `LifecycleWith`), run the offboard again: it removes what the teardown knows, and verifies again."},
	{string(tenancy.CodeErasureProofAltered), "ErasureProof.Check",
		"An erasure proof (`Report.Proof`, the `proof` of an offboard's answer on the operator listener) carries a SHA-256 digest of its own content. Recomputed over the proof as read, it does not match: a field (the tenant, a time, a family, the erased flag) was changed after the offboard wrote it, or the proof was re-encoded with a field lost.",
		"Use the proof as the offboard returned it, byte for byte as JSON; to change what it says, offboard or verify again (`Tenants.VerifyErasure`) and keep the new proof."},
	{string(tenancy.CodeTenantShareExceeded), "a route call",
		"The module bounds each tenant's calls in flight (`modules.TenantShare`): the calling tenant already had its share of calls running, and none of them ended within the share's `Wait`. Nothing was read or written. Other tenants' calls do not wait behind it. Retryable: the HTTP boundary answers `429` with `Retry-After`, the gRPC boundary `RESOURCE_EXHAUSTED`.",
		"Retry later. If the tenant's load is expected, raise the share's `Calls` or `Wait`, or give the tenant a placement of its own."},
	{string(tenancy.CodeTenantShareInvalid), "fx.New",
		"A `modules.TenantShare` cannot be met: it names a module the app does not have, the app has no `modules.Lifecycle` (no call entry would count the tenant's calls), `Calls` is below 1, `Wait` is negative, the module has two shares, or the module opens at most N connections and the share is N or more, which leaves none for the other tenants.",
		"Name one of the app's modules, add `modules.Lifecycle()`, and give `Calls` between 1 and one less than the module's most connections."},
	{string(tenancy.CodeTenantPlacementUnderFloor), "a route call; Tenants.Provision",
		"The tenant's plan (its record's `Plan`: `Tenants.SetPlan`, or the store `LifecycleConfig.Placed` reads) requires a tier above the placement the module holds it at (`Tenants.Place`, the record's `At`, or the module's default placement). The call entry refuses the call before it reaches any container, so a tenant whose plan requires its own schema or database is never served from shared containers, on any replica, whatever that replica last read: a replica holds a tenant's plan and placements from one record. Nothing was read or written.",
		"Place the tenant at its plan or above: provision it at that placement and record it (`Tenants.Place`, or the store's record), or lower the plan. Record a raised plan only once the tenant is placed at it."},
	{string(tenancy.CodeTenantPlacementInvalid), "fx.New; a route call",
		"At `fx.New`: a module's offer of placements is malformed (fewer than two tiers, a tier twice, `none`, or a default it does not offer), or a route of the module cannot be served at one of the tiers offered. On a call: the tenant's record places it, in this module, at a tier the module does not offer. The call fails closed: nothing was read or written, and the tenant is not served at the default instead.",
		"Offer each placement once, with a default among them, and keep in a module with placements only the route kinds that can be served at each. For a call: record one of the module's placements for the tenant."},
	{string(tenancy.CodeTenantMoving), "a route call (a write)",
		"A move (`Tenants.Move`) is copying the tenant's data in this module to another placement, and fences its writes until the copy is verified and the tenant switched: the write was refused before it reached any container, so nothing was written. Reads are served meanwhile, from where the tenant is. Every replica that has read the fence refuses the tenant's writes (`Placed.Moving` in the store's record, written by `MoveOptions.Record`). Retryable: the HTTP boundary answers `503` with `Retry-After`, the gRPC boundary `UNAVAILABLE`.",
		"Retry shortly. The fence lasts as long as the copy and its check (see the move's report, `Fenced`)."},
	{string(tenancy.CodeTenantMoveRefused), "Tenants.Move, Tenants.CleanupMove",
		"The tenant cannot be moved now: it is suspended or being offboarded, or another move of it in the same module is under way in this process. A cleanup (`Tenants.CleanupMove`) was asked to remove the tenant's current copy, which is not an old copy. Nothing was copied or removed.",
		"Resume the tenant and move it then; wait for the other move to end and rerun (a move can be rerun at any point); clean up only a placement the tenant was moved away from."},
	{string(tenancy.CodeTenantMoveUnverified), "Tenants.Move",
		"The move exported the tenant's copy at the new placement and compared it, section by section (route and family), record by record (count and SHA-256 of the records' content), with what it read from the old placement: they differ. The copy was removed, the fence lifted, and the tenant is still served from where it was, with nothing lost.",
		"Find what wrote to either copy while the move ran: a replica that had not read the fence (record the move in the store with `MoveOptions.Record`, read by `LifecycleConfig.Placed`), or a writer outside the module's routes. Then move again."},
	{string(tenancy.CodeTenantRateLimited), "HTTP request, gRPC call",
		"The boundary's admission (`tenanthttp.Config.Admission`, `tenantgrpc.Config.Admission`) keeps a token bucket per tenant: `Rate` requests a second on average, `Burst` at once. The request's tenant had no token left, so the handler was not run. Answered `429` with `Retry-After` (whole seconds, rounded up, until the next token); a gRPC call `RESOURCE_EXHAUSTED` with a `google.rpc.RetryInfo` detail. Retryable: the same request succeeds once a token has refilled. Other tenants are not affected: each has its own bucket.",
		"Client: retry after the time given. Service: raise the tenant's `Rate` or `Burst` (its entry in `Admission.Tenants`, what `Admission.For` returns for its plan, or `Admission.Default`)."},
	{string(tenancy.CodeTenantConcurrencyLimited), "HTTP request, gRPC call",
		"The boundary's admission bounds how many requests of one tenant run at once (`Limits.InFlight`), and the request's tenant already had that many running, so the handler was not run. Answered `429` with `Retry-After: 1`; a gRPC call (unary, or a stream for its whole life) `RESOURCE_EXHAUSTED` with a `google.rpc.RetryInfo` detail. Retryable: the same request succeeds once one of the tenant's requests has ended.",
		"Client: retry after the time given, or send fewer requests at once. Service: raise the tenant's `InFlight`, or make its requests shorter."},
	{string(tenancy.CodeTenantLimitsInvalid), "fx.New; HTTP request, gRPC call",
		"A tenant's admission limits cannot be enforced as written: a `Rate` that is negative, not finite, or set without a `Burst` of at least 1; a `Burst` with no `Rate`; a negative `InFlight` or `MaxTenants`. Limits in `Admission.Default` and `Admission.Tenants` are checked at `fx.New`, so the app is refused before any listener opens. Limits that `Admission.For` returns are checked on each request: a request whose tenant's limits are invalid is refused (`500`, code `internal`; gRPC `Internal`) rather than served unlimited.",
		"Give every limit a `Rate` above 0 with a `Burst` of at least 1 (or both 0 for no rate limit), and an `InFlight` of 0 (no bound) or more; fix what `Admission.For` returns for the tenant's plan."},
	{string(tenancy.CodeArchiveInvalid), "Tenants.Import",
		"The archive is not a tenantwire archive of a format version this build reads: the header line is missing or of another format, a line is not valid JSON or carries fields the format does not have, or the manifest line is missing (the archive was cut short). Nothing was written.",
		"Import the whole archive as Tenants.Export wrote it (docs/archive.md); export the tenant again if it was cut short."},
	{string(tenancy.CodeArchiveMismatch), "Tenants.Import",
		"The archive's records do not match its manifest (a route's record count or sha256 differs: the archive was altered), or the manifest does not match the app: a module or route the app does not have, another backend, or an older migration version the module cannot migrate forward (its migrations run on containers every tenant shares, or its backend imports at its own version only; a PostgreSQL module whose migrations run in each tenant's schema, or in each routed tenant's own database, migrates an older archive forward). Nothing was written.",
		"Import an unaltered archive into an app with the same modules, at the archive's migration version where the module cannot migrate it forward (then migrate the tenant)."},
	{string(tenancy.CodeArchiveVersionAhead), "Tenants.Import",
		"The archive was exported at a migration version of the module newer than the app's latest: its records may use columns, fields or collections the app's schema does not have yet, and no migration runs backwards. Nothing was written.",
		"Import with a release of the app whose module has migrations up to the archive's version at least, or export the tenant again from an app at this one's version."},
	{string(tenancy.CodeArchiveTargetNotEmpty), "Tenants.Import",
		"The target tenant already holds data in the module named: an import fills an empty, provisioned tenant only, so it never mixes two tenants' records. Nothing was written by that module.",
		"Import into a freshly provisioned tenant, or offboard the target (removing its data) and provision it again first."},
}

// Explain returns the documentation of a code: a shared one, or one of
// the given backends' own. Any "<backend>_tenancy_validation_failed"
// resolves to the shared entry.
func Explain(code string, backends ...Backend) (CodeDoc, bool) {
	for _, d := range CodeDocs {
		if d.Code == code {
			return d, true
		}
	}
	for _, b := range backends {
		for _, d := range b.Codes {
			if d.Code == code {
				return d, true
			}
		}
	}
	if backend, ok := strings.CutSuffix(code, "_tenancy_validation_failed"); ok && backend != "" {
		for _, d := range CodeDocs {
			if d.Code == validationPattern {
				d.Code = code
				return d, true
			}
		}
	}
	return CodeDoc{}, false
}

// WriteCodesMarkdown renders docs/errors.md: the shared codes, the
// concrete validation code of each backend under the shared entry, then
// each backend's own codes.
func WriteCodesMarkdown(w io.Writer, backends ...Backend) error {
	var b strings.Builder
	b.WriteString("# Error codes\n\n<!-- Generated by `make matrix` from floors.CodeDocs and each backend's Codes; do not edit. -->\n\n")
	b.WriteString("Every refusal is a `*tenancy.Error`: `errors.As` finds it through fx's wrapping, and\n")
	b.WriteString("`errors.Is(err, tenancy.Code(\"...\"))` compares it to a code. Wiring refusals carry the module,\n")
	b.WriteString("backend, route, reached tier, required tier, ceiling, origin and a fix. `tenantwire explain CODE`\n")
	b.WriteString("prints the same text as this page.\n\n")
	for _, d := range CodeDocs {
		fmt.Fprintf(&b, "## `%s`\n\n**Raised:** %s\n\n%s\n\n**Fix:** %s\n\n", d.Code, d.When, d.Meaning, d.Fix)
		if d.Code == validationPattern && len(backends) > 0 {
			b.WriteString("Concrete codes:")
			for _, be := range backends {
				fmt.Fprintf(&b, " `%s`", tenancy.ValidationFailed(be.Name))
			}
			b.WriteString(".\n\n")
		}
	}
	for _, be := range backends {
		for _, d := range be.Codes {
			fmt.Fprintf(&b, "## `%s`\n\n**Backend:** %s. **Raised:** %s\n\n%s\n\n**Fix:** %s\n\n", d.Code, be.Name, d.When, d.Meaning, d.Fix)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
