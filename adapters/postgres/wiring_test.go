package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// nowhere is a DSN no server answers: wiring checks must never dial.
const nowhere = "postgres://nobody@127.0.0.1:1/none?sslmode=disable"

func resolveNowhere(context.Context, tenancy.ID) (routing.Credentials, error) {
	return routing.Credentials{Endpoint: nowhere}, nil
}

func perTenantDocs(history naming.Name) postgres.Option {
	return postgres.Document[item]("orders", postgres.DocumentConfig{
		Read: naming.PerTenant("orders"), Write: naming.PerTenant("orders"), History: history,
	})
}

func TestWiring(t *testing.T) {
	t.Run("namespace floor met by per-tenant schemas", func(t *testing.T) {
		tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere), modules.RequiredIsolation(tenancy.Namespace),
			perTenantDocs(naming.PerTenant("orders_history"))))
	})
	t.Run("a static history table keeps the route below namespace", func(t *testing.T) {
		e := tenancytest.RequireRefused(t, tenancy.ValidationFailed("postgres"),
			postgres.Module("pg", postgres.Connect(nowhere), modules.RequiredIsolation(tenancy.Namespace),
				perTenantDocs(naming.Shared("orders_history"))))
		if e.Route != "orders" || e.Reached != tenancy.None || e.Required != tenancy.Namespace {
			t.Errorf("refusal fields: %+v", e)
		}
	})
	t.Run("tagged floor met by TenantAware", func(t *testing.T) {
		tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere), modules.RequiredIsolation(tenancy.Tagged),
			postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("o"), Write: naming.Shared("o")})))
	})
	t.Run("dedicated floor met by a routed client", func(t *testing.T) {
		tenancytest.RequireWires(t, postgres.Module("pg", postgres.Routed(resolveNowhere, postgres.RoutedConfig{}),
			modules.RequiredIsolation(tenancy.Dedicated),
			postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.Shared("o"), Write: naming.Shared("o")})))
	})
	t.Run("dedicated floor refused on a plain client", func(t *testing.T) {
		tenancytest.RequireRefused(t, tenancy.ValidationFailed("postgres"),
			postgres.Module("pg", postgres.Connect(nowhere), modules.RequiredIsolation(tenancy.Dedicated), perTenantDocs(naming.Name{})))
	})
	t.Run("routed worst case over the budget", func(t *testing.T) {
		tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded,
			postgres.Module("pg", postgres.Routed(resolveNowhere, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 50, MaxConnsPerClient: 4}}),
				modules.ConnBudget(100), perTenantDocs(naming.Name{})))
		tenancytest.RequireWires(t,
			postgres.Module("pg", postgres.Routed(resolveNowhere, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 25, MaxConnsPerClient: 4}}),
				modules.ConnBudget(100), perTenantDocs(naming.Name{})))
	})
	t.Run("per-client limit beyond a pgx pool's", func(t *testing.T) {
		// MaxConnsPerClient is an int like every adapter's; pgx takes an
		// int32, so a larger value must be refused, not wrapped.
		tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
			postgres.Module("pg", postgres.Routed(resolveNowhere, postgres.RoutedConfig{Limits: routing.Limits{MaxConnsPerClient: 1 << 32}}),
				perTenantDocs(naming.Name{})))
	})
	t.Run("no connection source", func(t *testing.T) {
		tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", perTenantDocs(naming.Name{})))
	})
	t.Run("duplicate route names", func(t *testing.T) {
		tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
			postgres.Module("pg", postgres.Connect(nowhere), perTenantDocs(naming.Name{}), perTenantDocs(naming.Name{})))
	})
	t.Run("bad schema prefix", func(t *testing.T) {
		tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
			postgres.Module("pg", postgres.Connect(nowhere), postgres.SchemaPrefix("Bad-Prefix"), perTenantDocs(naming.Name{})))
	})
}

// TestFailClosed: every tier refuses a call with no tenant bound, or in
// the tenant-global scope, with tenant_unbound; a resolver error is
// returned and no pool is used.
func TestFailClosed(t *testing.T) {
	url := testsvc.PostgresURL(t)
	run := unique()
	boom := errors.New("credential store unavailable")
	tiers := map[string]postgres.Option{
		"tagged":    postgres.Connect(url),
		"namespace": postgres.Connect(url),
		"dedicated": postgres.Routed(func(context.Context, tenancy.ID) (routing.Credentials, error) {
			return routing.Credentials{}, boom
		}, postgres.RoutedConfig{}),
	}
	for tier, conn := range tiers {
		t.Run(tier, func(t *testing.T) {
			dc := postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("fc_" + run), Write: naming.Shared("fc_" + run)}
			if tier == "namespace" {
				dc = postgres.DocumentConfig{Read: naming.PerTenant("fc"), Write: naming.PerTenant("fc")}
			}
			var d *postgres.Documents[item]
			start(t, postgres.Module("pg", conn, postgres.SchemaPrefix("tw"+run+"_"), postgres.Document[item]("fc", dc)), &d)
			for name, ctx := range map[string]context.Context{"unbound": context.Background(), "global": tenancy.WithGlobal(context.Background())} {
				_, err := d.Get(ctx, "x")
				_, err2 := d.Create(ctx, "x", item{})
				_, err3 := d.List(ctx, document.Query{})
				for _, e := range []error{err, err2, err3, d.Delete(ctx, "x")} {
					t.Logf("%s call", name)
					tenancytest.RequireUnbound(t, e, "pg", "postgres", "fc")
				}
			}
			if tier == "dedicated" {
				_, err := d.Get(tenancy.WithTenant(context.Background(), tenancytest.TenantA), "x")
				if !errors.Is(err, boom) {
					t.Errorf("resolver error: %v", err)
				}
			}
		})
	}
}
