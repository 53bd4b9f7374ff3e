package neo4j

import (
	"context"
	"errors"
	"fmt"
	"strings"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ErrEnterpriseRequired: the server refused to create a database. Creating
// databases (the namespace tier's per-tenant database) needs Neo4j
// Enterprise Edition; Community Edition serves one user database.
var ErrEnterpriseRequired = errors.New("neo4j: CREATE DATABASE needs Neo4j Enterprise Edition (Community Edition has one user database)")

// Provision creates tenant's database when the route has a per-tenant
// database, with CREATE DATABASE ... IF NOT EXISTS WAIT on the system
// database of the tenant's driver. It returns the database name. It is
// idempotent.
func (g *Graph) Provision(ctx context.Context, tenant tenancy.ID) (string, error) {
	r := g.r
	if !r.perTenantDB {
		return "", fmt.Errorf("neo4j: route %s has no per-tenant database to provision", r.spec.name)
	}
	sc, err := r.openFor(ctx, tenant)
	if err != nil {
		return "", err
	}
	defer sc.release()
	s, err := createDatabase(sc.database)
	if err != nil {
		return "", err
	}
	// Administration commands run auto-commit on the system database.
	sess := sc.drv.NewSession(ctx, "system")
	defer sess.Close(ctx)
	if _, err := sess.Run(ctx, s.cypher, s.params); err != nil {
		if enterpriseOnly(err) {
			return "", fmt.Errorf("neo4j: route %s: creating database %s: %w: %w", r.spec.name, sc.database, ErrEnterpriseRequired, err)
		}
		return "", fmt.Errorf("neo4j: route %s: creating database %s: %w", r.spec.name, sc.database, err)
	}
	return sc.database, nil
}

// enterpriseOnly recognises Community Edition's refusal of CREATE DATABASE.
func enterpriseOnly(err error) bool {
	var ne *drv.Neo4jError
	if !errors.As(err, &ne) {
		return false
	}
	return strings.Contains(ne.Code, "UnsupportedAdministrationCommand") ||
		strings.Contains(strings.ToLower(ne.Msg), "unsupported administration command")
}
