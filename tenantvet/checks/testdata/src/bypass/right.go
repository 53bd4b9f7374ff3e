package bypass

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A pool that is not handed to tenantwire is the application's own.
func own(ctx context.Context) {
	other, _ := pgxpool.New(ctx, "postgres://")
	other.Exec(ctx, "SELECT 1")
}

func escaped(ctx context.Context) {
	//tenantvet:ignore bypass the deployment-wide schema version table holds no tenant data
	shared.QueryRow(ctx, "SELECT version FROM app_meta")
}
