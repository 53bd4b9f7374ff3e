package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
)

// unique returns a fresh lower-case suffix so reruns never meet old tables.
func unique() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
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
	t.Cleanup(func() { app.Stop(context.Background()) })
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
