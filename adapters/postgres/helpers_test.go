package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
)

// unique returns a fresh lower-case suffix so reruns never meet old tables,
// nor tests of one run each other's: a run asks for some 1,200 names, so
// one byte of sequence would wrap and hand a test another's table, rows
// included.
func unique() string {
	n := seq.Add(1)
	return runID + hex.EncodeToString([]byte{byte(n >> 8), byte(n)})
}

// runID marks everything this test process creates, so TestMain can drop
// it afterwards; seq keeps names unique within the process.
var (
	runID = func() string {
		b := make([]byte, 3)
		rand.Read(b)
		return hex.EncodeToString(b)
	}()
	seq atomic.Uint32
)

// TestMain drops the tables, schemas and roles the run created, so the
// shared test database does not accumulate them.
func TestMain(m *testing.M) {
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func cleanup() {
	url := os.Getenv("TENANTWIRE_PG_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/tenantwire_test?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return // no server: nothing was created
	}
	defer conn.Close(ctx)
	like := "%" + runID + "%"
	var stmts []string
	rows, err := conn.Query(ctx, `SELECT format('DROP TABLE IF EXISTS %I.%I CASCADE', schemaname, tablename) FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE $1
		UNION ALL SELECT format('DROP SCHEMA IF EXISTS %I CASCADE', nspname) FROM pg_namespace WHERE nspname LIKE $1
		UNION ALL SELECT format('DROP OWNED BY %I; DROP ROLE IF EXISTS %I', rolname, rolname) FROM pg_roles WHERE rolname LIKE $1`, like)
	if err != nil {
		return
	}
	for rows.Next() {
		var s string
		if rows.Scan(&s) == nil {
			stmts = append(stmts, s)
		}
	}
	rows.Close()
	for _, s := range stmts {
		_, _ = conn.Exec(ctx, s) // best effort: a leftover is only clutter
	}
}

// start builds and starts an app around mod (named "pg"), fills targets
// (pointers to populate, or fx options such as named),
// and returns the module's client. The app stops when the test ends.
func start(t *testing.T, mod fx.Option, targets ...any) *postgres.Client {
	t.Helper()
	var c *postgres.Client
	opts := []fx.Option{fx.NopLogger, mod, fx.Invoke(fx.Annotate(func(cl *postgres.Client) { c = cl }, fx.ParamTags(`name:"pg"`)))}
	for _, tg := range targets {
		if o, ok := tg.(fx.Option); ok {
			opts = append(opts, o)
		} else {
			opts = append(opts, fx.Populate(tg))
		}
	}
	app := fx.New(opts...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return c
}

// named fills dst with the value provided as name:"<name>".
func named[T any](name string, dst *T) fx.Option {
	return fx.Invoke(fx.Annotate(func(v T) { *dst = v }, fx.ParamTags(`name:"`+name+`"`)))
}

// superuser opens a direct connection for test set-up.
func superuser(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestUniqueDoesNotRepeat: the names of one run never repeat, past the
// some 1,200 a run asks for.
func TestUniqueDoesNotRepeat(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		u := unique()
		if seen[u] {
			t.Fatalf("unique() repeated %s after %d names", u, len(seen))
		}
		seen[u] = true
	}
}
