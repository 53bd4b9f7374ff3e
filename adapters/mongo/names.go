package mongo

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// collection is where a route's documents live, from its RouteConfig:
// one collection every tenant shares, a collection per tenant, or a
// collection in a database per tenant.
type collection struct {
	name      string
	dbPrefix  string // per-tenant database prefix; "" is the module's database
	perTenant bool
	// custom is a naming.Func the config gave, which MongoDB refuses: it
	// spells per-tenant names itself.
	custom bool
}

func collectionOf(rc RouteConfig) collection {
	return collection{name: rc.Collection.Base(), perTenant: rc.Collection.PerTenant(), dbPrefix: rc.Database.Base(),
		custom: rc.Collection.Func() != nil || rc.Database.Func() != nil || !rc.Database.IsZero() && !rc.Database.PerTenant()}
}

// perTenantName reports whether the container is named per tenant.
func (c collection) perTenantName() bool { return c.perTenant || c.dbPrefix != "" }

func (c collection) relation(role string) floors.Relation {
	name := c.name
	if c.dbPrefix != "" {
		name = c.dbPrefix + "_*." + c.name
	} else if c.perTenant {
		name = c.name + ".*"
	}
	return floors.Relation{Role: role, Name: name, PerTenant: c.perTenantName()}
}

// resolve returns the database and collection for tenant; perTenant false
// means the tenant is not consulted (an outbox that is not tenant-aware).
func (c collection) resolve(moduleDB string, id tenancy.ID, perTenant bool) (db, coll string) {
	db, coll = moduleDB, c.name
	if !perTenant {
		return db, coll
	}
	if c.dbPrefix != "" {
		db = DatabaseName(c.dbPrefix, id)
	}
	if c.perTenant {
		coll = CollectionName(c.name, id)
	}
	return db, coll
}

func (c collection) validate() error {
	if c.custom {
		return fmt.Errorf("mongo names per-tenant collections and databases itself: Collection is naming.Shared or naming.PerTenant, Database zero or naming.PerTenant")
	}
	if err := validBase("collection", c.name, 64); err != nil {
		return err
	}
	if c.dbPrefix != "" {
		return validBase("database prefix", c.dbPrefix, maxDBPrefix)
	}
	return nil
}

// maxDBPrefix keeps DatabaseName within MongoDB's 63 bytes: prefix, '_'
// and 32 hex digits.
const maxDBPrefix = 63 - 33

// CollectionName is a tenant's collection: base, '.', the tenant's 32 hex
// digits. Bases hold no dot, so a per-tenant name never equals a static
// one, and the fixed-width suffix makes the name decode to exactly one
// (base, tenant): injective.
func CollectionName(base string, id tenancy.ID) string { return base + "." + id.Hex() }

// DatabaseName is a tenant's database: prefix, '_', the tenant's 32 hex
// digits; injective by the same fixed-width suffix.
func DatabaseName(prefix string, id tenancy.ID) string { return prefix + "_" + id.Hex() }

// validBase accepts 1 to max of [A-Za-z0-9_-], not starting with
// "system" (MongoDB reserves system.* collections) or "_ferretdb_".
func validBase(what, s string, max int) error {
	if s == "" || len(s) > max {
		return fmt.Errorf("mongo: %s %q must be 1 to %d characters", what, s, max)
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b == '_' || b == '-' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9') {
			return fmt.Errorf("mongo: %s %q may hold only letters, digits, '-' and '_'", what, s)
		}
	}
	if strings.HasPrefix(strings.ToLower(s), "system") {
		return fmt.Errorf("mongo: %s %q may not start with \"system\" (reserved by MongoDB)", what, s)
	}
	if strings.HasPrefix(s, "_ferretdb_") {
		return fmt.Errorf("mongo: %s %q may not start with \"_ferretdb_\" (reserved by FerretDB)", what, s)
	}
	return nil
}

// ValidCollectionName reports whether MongoDB accepts s as a collection
// name: non-empty, valid UTF-8, no '$' or NUL, not system.*, at most 255
// bytes.
func ValidCollectionName(s string) error {
	switch {
	case s == "" || len(s) > 255:
		return fmt.Errorf("mongo: collection name %q must be 1 to 255 bytes", s)
	case !utf8.ValidString(s):
		return fmt.Errorf("mongo: collection name %q is not valid UTF-8", s)
	case strings.ContainsAny(s, "$\x00"):
		return fmt.Errorf("mongo: collection name %q holds '$' or NUL", s)
	case strings.HasPrefix(s, "system."):
		return fmt.Errorf("mongo: collection name %q is reserved", s)
	}
	return nil
}

// ValidDatabaseName reports whether MongoDB accepts s as a database name:
// 1 to 63 bytes, none of / \ . space " $ * < > : | ? or NUL.
func ValidDatabaseName(s string) error {
	if s == "" || len(s) > 63 {
		return fmt.Errorf("mongo: database name %q must be 1 to 63 bytes", s)
	}
	if strings.ContainsAny(s, "/\\. \"$*<>:|?\x00") {
		return fmt.Errorf("mongo: database name %q holds a character MongoDB refuses", s)
	}
	return nil
}

// dbSpace is the shape of DatabaseName's names: a static module database
// of that shape could be some tenant's database.
var dbSpace = floors.TenantSpace{Sep: "_"}
