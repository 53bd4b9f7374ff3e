package bypass

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
)

var shared *pgxpool.Pool

func wire(ctx context.Context) []postgres.Option {
	pool, _ := pgxpool.New(ctx, "postgres://")
	pool.Exec(ctx, "DELETE FROM orders") // want `bypass: pool is handed to postgres.Use and also used directly \(pool.Exec\): the driver client bypasses the tenant routes \(no tenant predicate, schema or floor\) and reaches every tenant's data; use a tenantwire route \(a raw hatch for hand-written statements\) instead`
	pool.Ping(ctx)
	defer pool.Close()
	return []postgres.Option{postgres.Use(pool), postgres.Use(shared)}
}

func elsewhere(ctx context.Context) {
	shared.QueryRow(ctx, "SELECT * FROM orders") // want `bypass: shared is handed to postgres.Use and also used directly \(shared.QueryRow\)`
}
