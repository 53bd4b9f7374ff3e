package neo4j

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// dbFunc names a tenant's database (the namespace tier): a naming.Func,
// which must be injective (two tenants never share a database), or
// tenantDatabase. Its result is checked by ValidDatabaseName on every
// call, and an invalid name fails the call.
type dbFunc func(tenancy.ID) (string, error)

// Neo4j database names: 3 to 63 characters of lowercase ASCII letters,
// digits, dots and dashes, starting with a letter.
const (
	minDatabaseName = 3
	maxDatabaseName = 63
	// tenantSuffix is "-" and the tenant's 32 hex digits.
	tenantSuffix = 33
	// maxDatabasePrefix is the longest naming.PerTenant prefix a route's
	// Database accepts.
	maxDatabasePrefix = maxDatabaseName - tenantSuffix
)

// tenantDatabase is naming.PerTenant's resolver: prefix, a dash and the
// tenant's 32 lowercase hex digits. A fixed prefix followed by a
// fixed-width encoding of the whole ID is injective by construction. Its
// prefix is checked at fx.New and again on every call.
func tenantDatabase(prefix string) dbFunc {
	return func(id tenancy.ID) (string, error) {
		if err := validPrefix(prefix); err != nil {
			return "", err
		}
		return prefix + "-" + id.Hex(), nil
	}
}

// databaseSpace is the shape of tenantDatabase's names under any prefix:
// a static database of that shape could be some tenant's database.
var databaseSpace = floors.TenantSpace{Sep: "-"}

// ValidDatabaseName reports whether s is a database name the adapter will
// open or create.
func ValidDatabaseName(s string) error {
	if n := len(s); n < minDatabaseName || n > maxDatabaseName {
		return fmt.Errorf("neo4j: database name %q: %d characters, want %d to %d", s, n, minDatabaseName, maxDatabaseName)
	}
	if s[0] < 'a' || s[0] > 'z' {
		return fmt.Errorf("neo4j: database name %q must start with a lowercase ASCII letter", s)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return !dbChar(r) }); i >= 0 {
		return fmt.Errorf("neo4j: database name %q: character %q at %d is not a lowercase ASCII letter, digit, dot or dash", s, s[i], i)
	}
	// Neo4j reserves the system prefix.
	if strings.HasPrefix(s, "system") {
		return fmt.Errorf("neo4j: database name %q: the system prefix is reserved", s)
	}
	return nil
}

func dbChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-'
}

// validPrefix checks a tenantDatabase prefix: it must make every name valid.
func validPrefix(p string) error {
	if p == "" || len(p) > maxDatabasePrefix {
		return fmt.Errorf("neo4j: database prefix %q: want 1 to %d characters", p, maxDatabasePrefix)
	}
	return ValidDatabaseName(p + "-" + strings.Repeat("0", 32))
}

// quote escapes a label, relationship type or property key as a Cypher
// identifier: backticked, with backticks doubled. Names are never
// interpolated raw. Backslashes and control characters are refused rather
// than escaped: no parser escape rules apply to what is left.
func quote(what, s string) (string, error) {
	if s == "" || len(s) > 255 || !utf8.ValidString(s) {
		return "", fmt.Errorf("neo4j: %s %q: want 1 to 255 bytes of valid UTF-8", what, s)
	}
	for _, r := range s {
		if r == '\\' || r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("neo4j: %s %q: backslashes and control characters are not allowed", what, s)
		}
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`", nil
}
