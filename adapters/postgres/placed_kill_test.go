package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestMoveUnderLoadKilledAtEveryCheckpoint: a replica serves tenant A
// and B to the 32 goroutines of moveLoad, following the app's store,
// while a second process moves A tagged → namespace and is killed at a
// checkpoint: after the fence is recorded, once the target schema is
// made, halfway through the import (its transaction open), once the
// import committed, as the check begins, after the switch is recorded,
// after the lift is recorded. A kill ends the process's sessions on the
// server, as a crash does, and nothing the move would do after it runs.
// A third process reruns the move. Each run ends where an uninterrupted
// move ends: A at namespace in the store and on the serving replica, no
// fence left, every acknowledged write of A there, never a read of B's
// record, of a partial tenant, or a failed read.
func TestMoveUnderLoadKilledAtEveryCheckpoint(t *testing.T) {
	a := tenancytest.TenantA
	for _, kill := range []string{"record 1", "provision", "import", "copied", "verify", "record 2", "record 3"} {
		t.Run(kill, func(t *testing.T) {
			site := newPlacedSite(t, false)
			store := &tenancytest.PlacedStore{}
			lc := func() fx.Option {
				return modules.LifecycleWith(modules.LifecycleConfig{
					Suspended: func(context.Context) ([]tenancy.ID, error) { return nil, nil },
					Placed:    store.Read, Refresh: 5 * time.Millisecond,
				})
			}
			serving := site.start(t, lc())
			for _, id := range []tenancy.ID{a, tenancytest.TenantB} {
				if _, err := serving.tenants.Provision(context.Background(), id); err != nil {
					t.Fatal(err)
				}
			}
			const n = 500
			seedMoving(t, serving, n)
			load := startMoveLoad(serving.docs, n)
			defer load.end(t)
			time.Sleep(50 * time.Millisecond)

			k := &killPoint{at: kill, app: "tw-killed-" + unique(), admin: superuser(t)}
			cfg, err := pgxpool.ParseConfig(testsvc.PostgresURL(t))
			must0(t, err)
			cfg.ConnConfig.RuntimeParams["application_name"] = k.app
			cfg.ConnConfig.Tracer = k
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			must0(t, err)
			first := site.startOn(t, lc(), postgres.Use(pool))
			records := 0
			record := func(ctx context.Context, p modules.Placed) error {
				if err := store.Write(ctx, p); err != nil {
					return err
				}
				records++
				k.reach(fmt.Sprintf("record %d", records))
				return nil
			}
			func() {
				defer func() {
					r := recover()
					if r == nil {
						return // t.Fatalf's Goexit
					}
					if got, ok := r.(killed); !ok || got.at != kill {
						panic(fmt.Sprintf("the move stopped with %v, want the kill at %q", r, kill))
					}
				}()
				_, err := first.tenants.Move(context.Background(), a, "orders", tenancy.Namespace, modules.MoveOptions{Record: record})
				t.Fatalf("the move ran to its end (%v) past the kill point %q", err, kill)
			}()
			first.stop()
			// Its sessions are gone. A call the kill cut off may hold a
			// connection it never gives back, which Close would wait for.
			pool.Reset()

			time.Sleep(30 * time.Millisecond) // the load goes on against what the kill left
			rerun := site.start(t, lc())
			if _, err := rerun.tenants.Move(context.Background(), a, "orders", tenancy.Namespace, modules.MoveOptions{Record: store.Write}); err != nil {
				t.Fatalf("the rerun: %v", err)
			}
			time.Sleep(30 * time.Millisecond) // and on against the moved tenant
			load.end(t)
			if rec := store.Get(a); rec.At["orders"] != tenancy.Namespace || slices.Contains(rec.Moving, "orders") {
				t.Fatalf("the store after the rerun: placed %v, moving %v", rec.At, rec.Moving)
			}
			if p := serving.tenants.Placement(a); p.At["orders"] != tenancy.Namespace || len(p.Moving) != 0 {
				t.Fatalf("the serving replica after the rerun: placed %v, moving %v", p.At, p.Moving)
			}
			load.check(t, serving.docs, n)
			t.Logf("killed at %q and rerun under load: %d writes of A acknowledged, %d refused under the fence and retried", kill, len(load.acked), load.fenced.Load())
		})
	}
}

// killPoint cuts a process's move off at one checkpoint: the tracer of
// the process's pool (or its Record) reaches the point, ends the
// process's sessions on the server (which rolls back what they had
// open), and panics with killed, so nothing the move would do after it
// runs. The checkpoints on the pool, in the move's order: "provision"
// once the target's provisioning committed (its schema and tables); "import" as the import's transaction
// is about to commit; "copied" once it has; "verify" as the check's
// first read begins (the second read-only transaction, after the copy's
// export of the source: the check reads the copy and the source at
// once, and either may be first).
type killPoint struct {
	at, app string
	admin   *pgx.Conn

	mu       sync.Mutex
	readOnly int  // read-only transactions begun: the export, then the check
	importTx bool // a transaction begun after the export: the import
	fired    bool
}

type killed struct{ at string }

type sqlKey struct{}

func (k *killPoint) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	sql := strings.ToLower(strings.TrimSpace(d.SQL))
	k.mu.Lock()
	point := ""
	switch {
	case strings.HasPrefix(sql, "begin") && strings.Contains(sql, "read only"):
		k.readOnly++
		if k.readOnly == 2 {
			point = "verify"
		}
	case sql == "begin" && k.readOnly == 1:
		k.importTx = true
	case sql == "commit" && k.importTx:
		point = "import"
	}
	k.mu.Unlock()
	k.reach(point)
	return context.WithValue(ctx, sqlKey{}, sql)
}

func (k *killPoint) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	k.mu.Lock()
	point := ""
	switch {
	case d.Err == nil && sql == "commit" && k.readOnly == 0:
		point = "provision"
	case d.Err == nil && sql == "commit" && k.importTx:
		point = "copied"
	}
	k.mu.Unlock()
	k.reach(point)
}

// reach kills the process if point is its checkpoint, once.
func (k *killPoint) reach(point string) {
	k.mu.Lock()
	fire := point == k.at && !k.fired
	k.fired = k.fired || fire
	k.mu.Unlock()
	if !fire {
		return
	}
	if _, err := k.admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, k.app); err != nil {
		panic(fmt.Sprintf("ending the killed process's sessions: %v", err))
	}
	panic(killed{point})
}
