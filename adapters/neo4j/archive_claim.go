package neo4j

import (
	"context"
	"fmt"
	"strings"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// An import holds a claim on each database it writes for its whole run:
// a history node (the migration history's label, so no route reads it,
// and its uniqueness constraint, so one CREATE wins) of target
// "import/<tenant hex>". Two replicas importing into one tenant at once
// both pass the emptiness check; the claim lets one of them on, and the
// other is refused before it writes. A claim left by a crashed import is
// taken over once it is older than claimTTL.

// importTarget is the history target of tenant's import claim.
func importTarget(tenant tenancy.ID) string { return "import/" + tenant.Hex() }

// claimImport takes the import claim of tenant on every database the
// module's routes write for it, and returns what releases them all.
// Another import's fresh claim is archive_target_not_empty.
func (o *lifecycleTarget) claimImport(ctx context.Context, tenant tenancy.ID) (release func(), err error) {
	rec := map[string]any{"module": o.core.module, "target": importTarget(tenant), "version": int64(0), "ttl": int64(claimTTL.Seconds())}
	held := map[scopeKey]bool{}
	release = func() {
		_ = o.onDatabases(context.WithoutCancel(ctx), tenant, func(ctx context.Context, sc scope) error {
			if !held[keyOf(sc)] {
				return nil
			}
			sess := sc.drv.NewSession(ctx, sc.database)
			defer sess.Close(ctx)
			_, err := sess.ExecuteWrite(ctx, func(run runner) (any, error) {
				return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target, version: $version}) WHERE "+unmarked+" DELETE h", rec)
			})
			return err
		})
	}
	err = o.onDatabases(ctx, tenant, func(ctx context.Context, sc scope) error {
		sess := sc.drv.NewSession(ctx, sc.database)
		defer sess.Close(ctx)
		if err := ensureHistory(ctx, sess); err != nil {
			return fmt.Errorf("neo4j: module %s: the import claim's constraint: %w", o.core.module, err)
		}
		_, err := sess.ExecuteWrite(ctx, func(run runner) (any, error) {
			return run.Run(ctx, "CREATE (:"+historyLabel+" {module: $module, target: $target, version: $version, state: 'importing', at: datetime()})", rec)
		})
		if err == nil {
			held[keyOf(sc)] = true
			return nil
		}
		if !strings.Contains(neoCode(err), "ConstraintValidationFailed") {
			return err
		}
		// Taken over only when stale, in the statement that reads it, after
		// taking the node's write lock, as a migration claim is.
		res, err := sess.ExecuteWrite(ctx, func(run runner) (any, error) {
			return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target, version: $version}) WHERE "+unmarked+" "+
				"SET h.lock = true REMOVE h.lock WITH h WHERE h.at < datetime() - duration({seconds: $ttl}) SET h.at = datetime() RETURN count(h)", rec)
		})
		if err != nil {
			return err
		}
		if recs := res.([]*drv.Record); len(recs) == 1 && recs[0].Values[0] == int64(1) {
			held[keyOf(sc)] = true
			return nil
		}
		return migrate.ArchiveTargetNotEmpty(o.core.module, rules.Name, tenant, "database "+sc.database+
			" (another import of the tenant holds it: wait for it to end; a claim a crashed import left is taken over after "+claimTTL.String()+")")
	})
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// scopeKey names one database of one server.
type scopeKey struct{ target, database string }

func keyOf(sc scope) scopeKey { return scopeKey{sc.target, sc.database} }

// onDatabases runs fn once on each database the module's routes keep
// tenant's data in.
func (o *lifecycleTarget) onDatabases(ctx context.Context, tenant tenancy.ID, fn func(context.Context, scope) error) error {
	seen := map[scopeKey]bool{}
	return o.walk(ctx, tenant, "importing", func(ctx context.Context, _ *route, sc scope, _ neoFamily) error {
		if k := keyOf(sc); !seen[k] {
			seen[k] = true
			return fn(ctx, sc)
		}
		return nil
	})
}
