package modules_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

type Order struct{ Item string }

// DryRun checks an app's options without building it: the PostgreSQL
// module points at a server that does not exist, and nothing notices,
// because no constructor runs. Every violation comes back, each a
// *tenancy.Error, with the matrix of every route, refused ones included.
func ExampleDryRun() {
	appOptions := fx.Options(
		postgres.Module("orders",
			postgres.Connect("postgres://app@db.invalid:5432/shop?pool_max_conns=4"),
			modules.RequiredIsolation(tenancy.Namespace),
			postgres.Document[Order]("orders", postgres.DocumentConfig{
				Read: naming.PerTenant("orders"), Write: naming.PerTenant("orders"),
			}),
		),
		memory.Module("cache",
			modules.RequiredIsolation(tenancy.Namespace),
			memory.CacheRoute("sessions", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("sessions")}),
		),
	)
	report, err := modules.DryRun(appOptions)
	for _, code := range tenancy.Codes(err) {
		fmt.Println("refused:", code)
	}
	_ = report.Matrix.WriteText(os.Stdout)
	// Output:
	// refused: memory_tenancy_validation_failed
	// MODULE  ROUTE     KIND      REACHED    ORIGIN      ORIGIN FLOOR  DECLARED   MAX CONNS  VERDICT
	// cache   sessions  cache     tagged     structured  none          namespace  -          memory_tenancy_validation_failed
	// orders  orders    document  namespace  structured  none          namespace  4          ok
}

// Lifecycle gives an app one place to suspend a tenant: every route of
// every module refuses it from the next call on, and serves it again once
// resumed.
func ExampleLifecycle() {
	var (
		tenants *modules.Tenants
		carts   *memory.Cache
	)
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		memory.Module("shop", memory.CacheRoute("carts", memory.CacheConfig{Keys: naming.PerTenant("carts")})),
		fx.Populate(&tenants, &carts))
	if err := app.Err(); err != nil {
		fmt.Println(err)
		return
	}
	id := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	acme := tenancy.WithTenant(context.Background(), id)
	tenants.Suspend(id)
	fmt.Println(tenancy.CodeOf(carts.Set(acme, "k", []byte("v"), time.Minute)))
	tenants.Resume(id)
	fmt.Println(carts.Set(acme, "k", []byte("v"), time.Minute))
	// Output:
	// tenant_suspended
	// <nil>
}

// TenantHandler puts the bound tenant on every log record logged with the
// request's context, so no handler threads it by hand.
func ExampleTenantHandler() {
	log := slog.New(modules.TenantHandler(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable example
			}
			return a
		},
	})))
	ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7"))
	log.InfoContext(ctx, "order placed", "order", "o-1")
	// Output:
	// level=INFO msg="order placed" order=o-1 tenant=7c9e6679-7425-40de-944b-e07fc1f90ae7
}

// A context that carries a call site adds its module and route too: a
// Kafka consumer hands its handler one, and a worker of your own makes one
// with WithCallSite.
func ExampleWithCallSite() {
	log := slog.New(modules.TenantHandler(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable example
			}
			return a
		},
	})))
	ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7"))
	ctx = modules.WithCallSite(ctx, "billing", "invoices")
	log.InfoContext(ctx, "invoice sent", "invoice", "i-7")
	// Output:
	// level=INFO msg="invoice sent" invoice=i-7 tenant=7c9e6679-7425-40de-944b-e07fc1f90ae7 module=billing route=invoices
}
