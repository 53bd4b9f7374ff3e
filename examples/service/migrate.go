package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// migrations are the orders module's schema changes, applied to every
// tenant's schema by Provision and by the migrate command.
//
//go:embed migrations/*.sql
var migrations embed.FS

// ordersVersion is the migration version the orders route needs: the
// service refuses to start while a registered tenant is behind it.
const ordersVersion = 3

// registry is the service's tenant registry: a table in schema
// <prefix>reg of the same database.
func registry(pool *pgxpool.Pool, prefix string) (*postgres.Registry, error) {
	return postgres.NewRegistry(pool, prefix+"reg")
}

// ordersModule is the orders module, shared by the service and its
// migrate command: only the application knows its modules and their
// migrations.
func ordersModule(pgURL, prefix string, reg migrate.Registry) fx.Option {
	steps, _ := fs.Sub(migrations, "migrations") // a constant path: cannot fail
	return postgres.Module("orders",
		postgres.Connect(pgURL),
		postgres.SchemaPrefix(prefix),
		modules.AllowTeardown(),
		modules.RequiredIsolation(tenancy.Namespace),
		modules.Migrations(steps),
		modules.RequiredVersion(ordersVersion),
		modules.TenantRegistry(reg),
		postgres.Document[Order]("orders", postgres.DocumentConfig{
			Read:  naming.PerTenant("orders"),
			Write: naming.PerTenant("orders"),
		}),
	)
}

// runMigrate is `service migrate [-dry-run] [-concurrency N] [-prefix P]`:
// it migrates every tenant the registry lists. The app is built, not
// started (starting refuses stale tenants); a rerun after a crash
// continues where the last run stopped.
func runMigrate(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("migrate", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dry := flags.Bool("dry-run", false, "list the migrations each tenant would get; change nothing")
	conc := flags.Int("concurrency", 4, "tenants migrated at once")
	prefix := flags.String("prefix", env("SERVICE_SCHEMA_PREFIX", "svc"), "the service's tenant schema prefix")
	if err := flags.Parse(args); err != nil {
		return err
	}
	pgURL := env("TENANTWIRE_PG_URL", "postgres://postgres@127.0.0.1:5432/tenantwire_test?sslmode=disable")
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg, err := registry(pool, *prefix)
	if err != nil {
		return err
	}
	// Every backend's module provides its lifecycle the same way.
	var orders *migrate.Runner
	app := fx.New(fx.NopLogger, ordersModule(pgURL, *prefix, reg),
		fx.Invoke(fx.Annotate(func(r *migrate.Runner) { orders = r }, fx.ParamTags(`name:"orders"`))))
	if err := app.Err(); err != nil {
		return err
	}
	o := migrate.Options{Concurrency: *conc, DryRun: *dry, Every: 100}
	if f, ok := stdout.(*os.File); ok && isTerminal(f) {
		o.Progress = stderr
	} else {
		o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	rep, err := orders.MigrateAll(ctx, nil, o)
	if err != nil {
		return err
	}
	for _, c := range rep.Changes {
		verb := "applied"
		if *dry {
			verb = "would apply"
		}
		fmt.Fprintf(stdout, "%s %s %04d_%s to tenant %s\n", verb, c.Module, c.Version, c.Name, c.Tenant)
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(stdout, "FAILED tenant %s: %v\n", f.Tenant, f.Err)
	}
	fmt.Fprintf(stdout, "%d tenants: %d done, %d failed, %d steps, %.0f tenants/s\n", rep.Total, rep.Done, len(rep.Failures), len(rep.Changes), rep.PerSecond())
	if len(rep.Failures) > 0 || rep.Err != nil {
		return errors.Join(errors.New("some tenants were not migrated: rerun to continue"), rep.Err)
	}
	return nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
