package kafka

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

// TestScopeFollowsRule: giving the producer kind the rule "the resolver
// is passed the tenant only when tenant-aware" moves the matrix row
// (namespace → none) and the runtime together: the topic a record goes
// to, and whether an unbound call is refused.
func TestScopeFollowsRule(t *testing.T) {
	topics := ProducerConfig{Topic: naming.Func(func(id tenancy.ID) (string, error) { return "orders-" + id.Hex(), nil })}
	probe := func(t *testing.T) (tenancy.Tier, string, string, error) {
		t.Helper()
		var (
			m floors.Matrix
			p *Producer
		)
		app := fx.New(fx.NopLogger, Module("m", Brokers("127.0.0.1:1"), ProducerRoute("orders", topics)),
			fx.Invoke(func(l modules.Live) { m = l.Matrix() }),
			fx.Invoke(fx.Annotate(func(v *Producer) { p = v }, fx.ParamTags(`name:"orders"`))))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		bound, err := p.TopicFor(tenancy.WithTenant(context.Background(), tenancytest.TenantA))
		if err != nil {
			t.Fatal(err)
		}
		unbound, err := p.TopicFor(context.Background())
		return m.Rows[0].Reached, bound, unbound, err
	}
	shared := "orders-" + tenancy.ID{}.Hex()

	reached, bound, _, err := probe(t)
	if reached != tenancy.Namespace || bound != "orders-"+tenancytest.TenantA.Hex() {
		t.Errorf("shipped rule: reached %s, A's topic %s", reached, bound)
	}
	tenancytest.RequireUnbound(t, err, "m", "kafka", "orders")

	testsvc.UseRule(t, &rules, Rules(), kindProducer, func(r *floors.KindRule) { r.ResolverCountsOnlyWhenTenantAware = true })
	reached, bound, unbound, err := probe(t)
	if reached != tenancy.None || err != nil {
		t.Errorf("flipped rule: reached %s, unbound call %v; want none and no refusal", reached, err)
	}
	if bound != shared || unbound != shared {
		t.Errorf("flipped rule: A's topic %s, unbound topic %s; want both %s", bound, unbound, shared)
	}
}
