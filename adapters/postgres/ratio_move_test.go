package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioM1MoveCopy: M1, a move's copy of a tenant's rows between the
// tagged and namespace placements (its export and import) vs the
// hand-written COPY of the same rows out of the source table and into a
// table of the target's shape, round by round, moving back and forth;
// and the move's write fence, printed.
func TestRatioM1MoveCopy(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	p := newPlacedApp(t)
	a := tenancytest.TenantA
	rows := moveRecords(t)
	if rows == 2000 {
		rows = 100_000 // the target's size unless TENANTWIRE_MOVE_RECORDS says otherwise
	}
	ctx := context.Background()
	db := superuser(t)
	exec(t, db, `INSERT INTO public.`+p.table+` (tenant_id, id, version, value)
		SELECT $1, 'seed-' || g, 1, jsonb_build_object('name', 'seed', 'n', g) FROM generate_series(1, $2) g`, a.Bytes(), rows)
	exec(t, db, "ANALYZE public."+p.table)
	conn, err := pgx.Connect(ctx, testsvc.PostgresURL(t))
	must0(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	tagged := pgx.Identifier{"public", p.table}.Sanitize()
	own := pgx.Identifier{postgres.SchemaName(p.prefix, a), p.table}.Sanitize()
	scratch := "m1_" + unique()
	exec(t, db, "CREATE TABLE "+scratch+"_t (tenant_id uuid, id text, version bigint, value jsonb, PRIMARY KEY (tenant_id, id))")
	exec(t, db, "CREATE TABLE "+scratch+"_n (id text PRIMARY KEY, version bigint, value jsonb)")
	hand := func(toNamespace bool) time.Duration {
		// Out of the source's table, into a table of the target's shape.
		out, into := "COPY (SELECT id, version, value FROM "+tagged+" WHERE tenant_id = '"+a.String()+"') TO STDOUT", "COPY "+scratch+"_n FROM STDIN"
		if !toNamespace {
			out, into = "COPY (SELECT '"+a.String()+"'::uuid, id, version, value FROM "+own+") TO STDOUT", "COPY "+scratch+"_t FROM STDIN"
		}
		// Emptied as the move's cleanup empties the old copy: a shared
		// table keeps its dead rows until vacuumed, a schema is dropped.
		exec(t, db, "DELETE FROM "+scratch+"_t")
		exec(t, db, "TRUNCATE "+scratch+"_n")
		began := time.Now()
		var buf bytes.Buffer
		_, err := conn.PgConn().CopyTo(ctx, &buf, out)
		must0(t, err)
		_, err = conn.PgConn().CopyFrom(ctx, &buf, into)
		must0(t, err)
		return time.Since(began)
	}
	var rounds []float64
	var fences []time.Duration
	at := tenancy.Tagged
	for range 21 { // an odd count: the two directions alternate
		to := tenancy.Namespace
		if at == tenancy.Namespace {
			to = tenancy.Tagged
		}
		// The hand-written pair reads the rows where the move reads them,
		// just before it.
		base := hand(to == tenancy.Namespace)
		rep, err := p.tenants.Move(ctx, a, "orders", to, modules.MoveOptions{})
		must0(t, err)
		var copied time.Duration
		for _, s := range rep.Steps {
			if s.Step == modules.MoveCopy {
				copied = s.Ended.Sub(s.Started)
			}
		}
		if rep.Records != int64(rows) {
			t.Fatalf("the move copied %d records, want %d", rep.Records, rows)
		}
		rounds = append(rounds, float64(copied)/float64(base))
		fences = append(fences, rep.Fenced)
		if _, err := p.tenants.CleanupMove(ctx, a, "orders", at); err != nil {
			t.Fatal(err)
		}
		at = to
	}
	name := "pg-move-copy-" + strconv.Itoa(rows)
	ratio.ReportRounds(t, "M1", name, rounds, 1.25)
	longest := fences[0]
	for _, f := range fences {
		longest = max(longest, f)
	}
	fmt.Printf("fence M1-pg-move-%d longest %v over %d moves %v (target < 2s)\n", rows, longest.Round(time.Millisecond), len(fences), fences)
}
