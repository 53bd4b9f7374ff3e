package neo4j

import (
	"context"
	"fmt"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/tenancy"
)

// sharedCurrent refuses while the module's shared database, when a route
// uses it, is behind the required version.
func (c *core) sharedCurrent(ctx context.Context, routes []*routeSpec) error {
	for _, s := range routes {
		if r := newRoute(c, s); !r.perTenantDB && !c.routed() {
			sess := c.plain.NewSession(ctx, c.database)
			defer func() { _ = sess.Close(ctx) }()
			return c.ensureCurrent(ctx, sess, tenancy.ID{}, c.database, "")
		}
	}
	return nil
}

// ensureCurrent refuses a call for tenant (zero: the shared database)
// whose database, target, records a version below the required one.
func (c *core) ensureCurrent(ctx context.Context, sess session, tenant tenancy.ID, target, route string) error {
	return c.gate.Check(ctx, tenant, target, route, func(ctx context.Context) (int64, error) {
		return appliedVersion(ctx, sess, c.module, historyKey(tenant))
	})
}

// appliedVersion is the newest version the database's history records as
// applied for (module, key); 0 when none.
func appliedVersion(ctx context.Context, sess session, module, key string) (int64, error) {
	res, err := sess.ExecuteRead(ctx, func(run runner) (any, error) {
		return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target, state: 'applied'}) WHERE "+unmarked+" RETURN coalesce(max(h.version), 0)",
			map[string]any{"module": module, "target": key})
	})
	if err != nil {
		return 0, fmt.Errorf("neo4j: module %s: reading the migration history: %w", module, err)
	}
	recs := res.([]*drv.Record)
	if len(recs) == 0 {
		return 0, nil
	}
	v, _ := recs[0].Values[0].(int64)
	return v, nil
}
