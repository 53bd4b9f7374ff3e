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
// tenancytest.Boundary, and pin the app's tenancy matrix in CI with
// tenancytest.RequireMatrix, so a change that weakens a route fails a test.
// `go run ./cmd/tenantwire explain CODE` explains any error code.
//
// Packages floors and modules are for backend authors; an application
// needs them only to declare a worker of its own (modules.Worker), to read
// the live matrix (modules.Live) or to check its wiring without starting it
// (modules.DryRun).
package tenancy
