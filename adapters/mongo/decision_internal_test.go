package mongo

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestScopeFollowsRule: flipping "the resolver is passed the tenant only
// when tenant-aware" on a kind moves its matrix row and the collection a
// call resolves together, and whether an unbound call is refused. A route
// that decided its scope on its own would move only the matrix. Nothing
// connects (a collection handle is a name); integration/mongo's
// TestScopeFollowsEachKindsRule writes through both rules on a server.
func TestScopeFollowsRule(t *testing.T) {
	ctx := context.Background()
	bound := tenancy.WithTenant(ctx, tenancytest.TenantA)
	perTenant := CollectionName("hits", tenancytest.TenantA)
	probe := func(t *testing.T, kind floors.Kind) (tenancy.Tier, route) {
		t.Helper()
		var (
			m floors.Matrix
			r route
		)
		opt := CounterRoute("r", RouteConfig{Collection: naming.PerTenant("hits")})
		if kind == kindOutbox {
			opt = OutboxRoute("r", RouteConfig{Collection: naming.PerTenant("hits")})
		}
		app := fx.New(fx.NopLogger, Module("m", Connect("mongodb://127.0.0.1:1"), Database("app"), opt),
			fx.Invoke(func(l modules.Live) { m = l.Matrix() }),
			fx.Invoke(fx.Annotate(func(c *Counter) {
				if c != nil {
					r = c.route
				}
			}, fx.ParamTags(`name:"r" optional:"true"`))),
			fx.Invoke(fx.Annotate(func(o *Outbox) {
				if o != nil {
					r = o.route
				}
			}, fx.ParamTags(`name:"r" optional:"true"`))))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		return m.Rows[0].Reached, r
	}
	// lands reports the collection a call resolves, or its refusal.
	lands := func(t *testing.T, r route, ctx context.Context) (string, error) {
		t.Helper()
		_, tg, err := r.target(ctx)
		if err != nil {
			return "", err
		}
		defer tg.release()
		return tg.coll.Name(), nil
	}
	check := func(t *testing.T, kind floors.Kind, want tenancy.Tier, wantBound string, refused bool) {
		t.Helper()
		reached, r := probe(t, kind)
		if reached != want {
			t.Errorf("reached %s, want %s", reached, want)
		}
		if got, err := lands(t, r, bound); err != nil || got != wantBound {
			t.Errorf("bound call lands in %q, %v; want %q", got, err, wantBound)
		}
		got, err := lands(t, r, ctx)
		if refused {
			tenancytest.RequireUnbound(t, err, "m", "mongodb", "r")
		} else if err != nil || got != "hits" {
			t.Errorf("unbound call lands in %q, %v; want the shared hits", got, err)
		}
	}
	t.Run("counter", func(t *testing.T) {
		check(t, kindCounter, tenancy.Namespace, perTenant, true)
		testsvc.UseRule(t, &rules, Rules(), kindCounter, func(r *floors.KindRule) { r.ResolverCountsOnlyWhenTenantAware = true })
		check(t, kindCounter, tenancy.None, "hits", false)
	})
	t.Run("outbox", func(t *testing.T) {
		check(t, kindOutbox, tenancy.None, "hits", false)
		testsvc.UseRule(t, &rules, Rules(), kindOutbox, func(r *floors.KindRule) { r.ResolverCountsOnlyWhenTenantAware = false })
		check(t, kindOutbox, tenancy.Namespace, perTenant, true)
	})
}
