package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// maxIdent is PostgreSQL's identifier limit (NAMEDATALEN-1): longer names
// are truncated silently, which could make two tenants' names collide.
const maxIdent = 63

// defaultSchemaPrefix starts every tenant schema name.
const defaultSchemaPrefix = "tenant_"

// nameOf is base, per tenant or shared.
func nameOf(base string, perTenant bool) naming.Name {
	if perTenant {
		return naming.PerTenant(base)
	}
	return naming.Shared(base)
}

// validName accepts lower-case identifiers that need no case folding.
func validName(s string, max int) error {
	if s == "" || len(s) > max {
		return fmt.Errorf("postgres: name %q must be 1 to %d bytes", s, max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return fmt.Errorf("postgres: name %q may hold only a-z, 0-9 and _, and must not start with a digit", s)
		}
	}
	return nil
}

// checkPrefix validates a schema prefix: prefix + 32 hex digits + the role
// suffix must stay within the identifier limit.
func checkPrefix(p string) error {
	return validName(p, maxIdent-32-len(roleSuffix))
}

const roleSuffix = "_ro"

// schemaSpace is the shape of SchemaName's names under any prefix: a
// static schema of that shape could be some tenant's schema.
var schemaSpace = floors.TenantSpace{}

// SchemaName is the tenant's schema: prefix followed by the tenant's 32
// hex digits. Fixed-length hex after a fixed prefix makes it injective.
func SchemaName(prefix string, tenant tenancy.ID) string { return prefix + tenant.Hex() }

// RoleName is the tenant's confined reader role for dynamic reads.
func RoleName(prefix string, tenant tenancy.ID) string {
	return SchemaName(prefix, tenant) + roleSuffix
}

// defaultStaticSchema holds the static tables of a module.
const defaultStaticSchema = "public"

// ident is the qualified identifier of table r for tenant (ignored for a static
// relation, which lives in the static schema): always schema-qualified, so
// a session whose search_path names another schema cannot redirect it.
func ident(r naming.Name, prefix, static string, tenant tenancy.ID) pgx.Identifier {
	if r.PerTenant() {
		return pgx.Identifier{SchemaName(prefix, tenant), r.Base()}
	}
	return pgx.Identifier{static, r.Base()}
}
