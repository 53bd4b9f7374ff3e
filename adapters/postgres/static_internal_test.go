package postgres

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/naming"
)

// TestStaticSetFollowsTheTables: every route kind over static tables builds
// its statements once, at construction; over per-tenant tables it builds
// none there (cached builds them per tenant). Construction is shared
// (addTableRoute, addSearch, staticSet), so a route kind that stopped
// readying its set would fall back to the per-tenant cache unnoticed. No
// server is needed: nothing connects.
func TestStaticSetFollowsTheTables(t *testing.T) {
	for _, perTenant := range []bool{false, true} {
		rel := func(n string) naming.Name {
			if perTenant {
				return naming.PerTenant(n)
			}
			return naming.Shared(n)
		}
		ready := map[string]bool{}
		app := fx.New(fx.NopLogger,
			Module("pg", Connect("postgres://nobody@127.0.0.1:1/none?sslmode=disable"),
				CounterRoute("k", CounterConfig{Table: rel("k")}),
				InboxRoute("in", InboxConfig{TenantAware: true, Table: rel("in")}),
				IdempotencyRoute("id", IdempotencyConfig{TenantAware: true, Table: rel("id")}),
				SearchRoute("s", SearchConfig{Read: rel("s"), Heap: rel("s"), Index: rel("s_i")}),
				HubSearchRoute("hub", HubSearchConfig{TenantAware: true, Table: rel("hub")}),
				AnalyticsRoute("an", AnalyticsConfig{Source: rel("an")}),
				OutboxRoute("ob", OutboxConfig{TenantAware: true, Table: rel("ob")})),
			fx.Invoke(fx.Annotate(func(k *Counter, in *Inbox, id *Idempotency, s, hub *Search, an *Analytics, ob *Outbox) {
				ready["counter"], ready["inbox"], ready["idempotency"] = k.static != nil, in.static != nil, id.static != nil
				ready["search"], ready["hub search"] = s.static != nil, hub.static != nil
				ready["analytics"], ready["outbox"] = an.static != nil, ob.static != nil
			}, fx.ParamTags(`name:"k"`, `name:"in"`, `name:"id"`, `name:"s"`, `name:"hub"`, `name:"an"`, `name:"ob"`))))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		if len(ready) != 7 {
			t.Fatalf("built %d route objects, want 7", len(ready))
		}
		for kind, static := range ready {
			if static == perTenant {
				t.Errorf("%s (per-tenant tables: %v): static statement set built: %v", kind, perTenant, static)
			}
		}
	}
}
