package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOffboardVerifierFindsPlantedKeys, on one server and on the
// cluster: a key of the tenant written straight to the server after the
// Redis module's teardown (by a module offboarded after it), in a
// declared family, and a key of the tenant in a family nobody declared
// (which no teardown removes), each fail Offboard with
// tenant_erasure_incomplete naming the family; the tenant stays
// suspended. Once the key is gone, the offboard completes.
func TestOffboardVerifierFindsPlantedKeys(t *testing.T) {
	onEachTopology(t, func(t *testing.T, opts *goredis.UniversalOptions) {
		raw := goredis.NewUniversalClient(opts)
		defer raw.Close()
		type planter struct{}
		var plant string // the key the planter writes after the teardown
		var r struct {
			fx.In
			Tenants *modules.Tenants
			Count   *redis.Counter `name:"count"`
		}
		app := fx.New(fx.NopLogger, modules.Lifecycle(),
			redis.Module("fam", redis.Connect(opts), modules.AllowTeardown(),
				redis.CounterRoute("count", redis.RouteConfig{TenantAware: true})),
			fx.Provide(func() planter { return planter{} }),
			// "zz" is offboarded after "fam": its teardown writes.
			modules.ProvideTenantState(func(planter) modules.TenantState {
				return modules.TenantState{Module: "zz", Backend: "test", Offboard: func(ctx context.Context, _ tenancy.ID) error {
					if plant == "" {
						return nil
					}
					return raw.Set(ctx, plant, "1", time.Hour).Err()
				}}
			}),
			fx.Populate(&r))
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = app.Stop(context.Background()) }()

		for _, tc := range []struct{ family, key string }{
			{"route", ""}, // the counter's own key, written again
			{"undeclared", "tw:x:%s:planted"},
		} {
			a := tenancytest.FreshTenant(t)
			ctx := tenancy.WithTenant(context.Background(), a)
			if _, err := r.Count.Add(ctx, "n", 1); err != nil {
				t.Fatal(err)
			}
			plant = strings.Replace(tc.key, "%s", a.Hex(), 1)
			if tc.key == "" {
				keys := rawKeys(t, raw, "*"+a.Hex()+"*")
				if len(keys) != 1 {
					t.Fatalf("the counter's keys: %v", keys)
				}
				plant = keys[0]
			}
			rep, err := r.Tenants.Offboard(context.Background(), a)
			if tenancy.CodeOf(err) != tenancy.CodeTenantErasureIncomplete {
				t.Fatalf("%s: offboard with a planted key: %v", tc.family, err)
			}
			var te *tenancy.Error
			if !errors.As(err, &te) || te.Module != "fam" || !strings.Contains(te.Detail, `family "`+tc.family+`"`) || !strings.Contains(te.Detail, plant) {
				t.Fatalf("%s: the error does not name the module, family and key: %v", tc.family, err)
			}
			if len(rep[0].Left) != 1 || rep[0].Left[0].Family.Name != tc.family {
				t.Fatalf("%s: report: %+v", tc.family, rep[0])
			}
			if !r.Tenants.Suspended(a) {
				t.Fatalf("%s: the tenant must stay suspended", tc.family)
			}
			planted := plant
			plant = ""
			if err := raw.Del(context.Background(), planted).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Tenants.Offboard(context.Background(), a); err != nil {
				t.Fatalf("%s: offboard once the key is gone: %v", tc.family, err)
			}
		}
	})
}
