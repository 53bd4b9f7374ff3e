package floors

import (
	"fmt"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ReservedPrefix starts, in any letter case, every name the framework
// keeps for its own records: the migration history (PostgreSQL table and
// MongoDB collection tenantwire_migrations, Neo4j label
// TenantwireMigration) and the tenant registry (tenantwire_tenants,
// tenantwire_tenant_versions). A route that could name one could forge or
// read what the start-up and run-time checks trust.
const ReservedPrefix = "tenantwire"

// Reserved reports whether name starts with ReservedPrefix, in any case.
func Reserved(name string) bool {
	return len(name) >= len(ReservedPrefix) && strings.EqualFold(name[:len(ReservedPrefix)], ReservedPrefix)
}

// ReservedName is the refusal of a route that names (what: "table",
// "label") one of the framework's own names; nil when name is not
// reserved.
func (b Backend) ReservedName(module, route, what, name string) *tenancy.Error {
	if !Reserved(name) {
		return nil
	}
	return &tenancy.Error{Code: tenancy.CodeReservedName, Module: module, Backend: b.Name, Route: route,
		Detail: fmt.Sprintf("%s %q starts with %q, which the framework keeps for its migration history and tenant registry", what, name, ReservedPrefix),
		Fix:    fmt.Sprintf("rename the %s so that it does not start with %q (in any letter case)", what, ReservedPrefix)}
}

// TenantSpace is the shape of every name a backend's per-tenant naming
// gives, whatever the prefix: the prefix, Sep, then the tenant's 32
// lowercase hex digits (tenancy.ID.Hex). The prefix is left open on
// purpose: another module on the same server may use another one.
type TenantSpace struct {
	// Sep is what a per-tenant name puts between its prefix and the hex
	// ("_" for MongoDB databases, "-" for Neo4j databases, "." for Kafka
	// consumer groups, "" where the prefix carries its own separator).
	Sep string
}

// Contains reports whether name has the shape of a per-tenant name.
func (s TenantSpace) Contains(name string) bool {
	n := len(name) - 32 - len(s.Sep)
	if n < 0 || name[n:n+len(s.Sep)] != s.Sep {
		return false
	}
	for _, c := range []byte(name[len(name)-32:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// StaticInTenantSpace is the refusal of a container named statically (what:
// "static schema", "topic") whose name has space's shape: the tenant whose
// hex it ends in would take it for its own, so its provisioning, grants,
// migrations and teardown would act on what every tenant shares. option
// names the setting to change. Nil when name is outside the space.
func (b Backend) StaticInTenantSpace(module, route, what, name string, space TenantSpace, option string) *tenancy.Error {
	if !space.Contains(name) {
		return nil
	}
	tail := "32 lowercase hex digits"
	if space.Sep != "" {
		tail = fmt.Sprintf("%q and %s", space.Sep, tail)
	}
	return &tenancy.Error{Code: tenancy.CodeStaticNameInTenantSpace, Module: module, Backend: b.Name, Route: route,
		Detail: fmt.Sprintf("%s %q ends in %s, the shape of a per-tenant name: the tenant with those digits would take it for its own", what, name, tail),
		Fix:    fmt.Sprintf("rename %s so that it does not end in %s; per-tenant containers are named by the module's resolver, never statically", option, tail)}
}
