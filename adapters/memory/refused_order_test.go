package memory_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type cart struct{}

// An app's own invoke asking for any route of a module refused for its
// options (the refused route's own, or a sound route of the same module)
// gets the module's coded refusal, joined with the other modules'
// violations, wherever the invoke stands: in a module placed before the
// refused one (it runs before the module's check), at the root, or after.
func TestRefusalWinsWhateverTheInvokeOrder(t *testing.T) {
	uses := map[string]fx.Option{
		"document": tenancytest.Invoke[*memory.Documents[order]](""),
		"cache":    tenancytest.Invoke[*memory.Cache](""),
		"stream":   tenancytest.Invoke[*memory.Stream](""),
	}
	// Every kind the rules know is asked for: a new kind needs its line.
	for kind := range memory.Rules().Kinds {
		if uses[string(kind)] == nil {
			t.Fatalf("kind %s: no invoke asks for its route", kind)
		}
	}
	docs := func(c naming.Name) memory.Option {
		return memory.Document[order]("orders", memory.DocumentConfig{TenantAware: true, Read: c})
	}
	cache := memory.CacheRoute("kv", memory.CacheConfig{TenantAware: true, Keys: naming.PerTenant("kv")})
	stream := memory.StreamRoute("events", memory.StreamConfig{TenantAware: true, Stream: naming.Shared("events")})
	// The invokes ask for what a module wired right provides.
	for kind, u := range uses {
		if err := fx.New(fx.NopLogger, fx.Module("app", u), memory.Module("mem", docs(naming.Shared("orders")), cache, stream)).Err(); err != nil {
			t.Fatalf("%s: the wired module does not provide what the test asks for: %v", kind, err)
		}
	}
	// A container name with a dot refuses the document route; the cache
	// and stream routes are sound, but their module is refused all the same.
	refused := func() fx.Option {
		return memory.Module("mem", docs(naming.Shared("orders.x")), cache, stream,
			memory.Consume(memory.ConsumerConfig{Name: "c", Stream: "events", Handle: func(context.Context, memory.Message) error { return nil }}))
	}
	floorMiss := func() fx.Option {
		return memory.Module("shop", modules.RequiredIsolation(tenancy.Namespace),
			memory.Document[cart]("carts", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("carts")}))
	}
	tenancytest.RequireRefusedInAnyOrder(t, tenancy.CodeWiringInvalid, "mem", refused(), uses, floorMiss())
}
