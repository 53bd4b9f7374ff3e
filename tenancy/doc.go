// Package tenancy holds the vocabulary every tenantwire package shares: the
// isolation tiers, tenant IDs and their binding in a context, statement
// origins, and the coded error type that every refusal carries.
//
// # Where to start
//
// Compose a backend module (adapters/memory needs no server; then
// adapters/postgres, adapters/redis, adapters/mongo, adapters/kafka or
// adapters/neo4j) and declare the tier it must reach with its
// RequiredIsolation option. fx.New refuses wiring that reaches less, with a
// *Error naming the module, the route, the tiers and the fix; see the
// adapters/memory examples. Bind the tenant once per request with
// WithTenant, or with the tenanthttp middleware, and every adapter reads it
// from the context. Prove a route's boundary in a test with
// tenancytest.Boundary. `go run ./cmd/tenantwire explain CODE` explains any
// error code.
//
// Packages floors and modules are for backend authors; an application
// needs them only to declare a worker of its own (modules.Worker) or to read
// the live matrix (modules.Live).
package tenancy
