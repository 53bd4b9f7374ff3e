package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestMigrateCommand: tenants provisioned by an older build (no
// migrations) keep the service from starting; `service migrate -dry-run`
// lists the nine steps, `service migrate` applies them, a rerun applies
// none, and the service starts.
func TestMigrateCommand(t *testing.T) {
	pgURL := testsvc.PostgresURL(t)
	t.Setenv("TENANTWIRE_PG_URL", pgURL)
	prefix, pool := runPrefix(t, "svct", pgURL)
	ctx := context.Background()
	reg, err := registry(pool, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tenants := []tenancy.ID{acme, globex, tenancy.MustParseID("9d1c3a52-0000-4000-8000-000000000003")}
	t.Cleanup(func() {
		_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+prefix+"reg CASCADE")
		for _, id := range tenants {
			_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+postgres.SchemaName(prefix, id)+" CASCADE")
		}
	})

	var old *postgres.Client
	oldApp := fx.New(fx.NopLogger, postgres.Module("orders", postgres.Connect(pgURL), postgres.SchemaPrefix(prefix), modules.TenantRegistry(reg),
		postgres.Document[Order]("orders", postgres.DocumentConfig{Read: naming.PerTenant("orders"), Write: naming.PerTenant("orders")})),
		fx.Invoke(fx.Annotate(func(c *postgres.Client) { old = c }, fx.ParamTags(`name:"orders"`))))
	if err := oldApp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range tenants {
		if err := old.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	_ = oldApp.Stop(ctx)

	newApp := func() *fx.App { return fx.New(fx.NopLogger, ordersModule(pgURL, prefix, reg)) }
	if app := newApp(); tenancy.CodeOf(app.Start(ctx)) != tenancy.CodeTenantMigrationBehind {
		t.Fatal("the service started with its tenants behind")
	}

	var out, errs bytes.Buffer
	if err := runMigrate([]string{"-prefix", prefix, "-dry-run"}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, want := range []string{"would apply orders 0001_order_note to tenant " + acme.String(), "would apply orders 0003_order_created_index to tenant " + globex.String(), "3 tenants: 3 done, 0 failed, 9 steps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	for i, want := range []string{"3 tenants: 3 done, 0 failed, 9 steps", "3 tenants: 3 done, 0 failed, 0 steps"} {
		out.Reset()
		if err := runMigrate([]string{"-prefix", prefix, "-concurrency", "2"}, &out, &errs); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, errs.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("run %d: output lacks %q:\n%s", i, want, out.String())
		}
	}
	if !strings.Contains(errs.String(), "msg=\"migrate orders\" done=3 failed=0 total=3") {
		t.Errorf("no progress line on stderr:\n%s", errs.String())
	}
	app := newApp()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("start after migrating: %v", err)
	}
	_ = app.Stop(ctx)
}
