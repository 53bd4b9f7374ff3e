package memory_test

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/naming"
)

// TestRoutesInjectedNamedAndUnnamed: every memory route is provided as
// every backend provides it, under its route's name, and unnamed too;
// both are the one route object.
func TestRoutesInjectedNamedAndUnnamed(t *testing.T) {
	type routes struct {
		fx.In
		Docs, DocsUnnamed *memory.Documents[order]
		DocsNamed         *memory.Documents[order] `name:"orders"`
		Cache             *memory.Cache
		CacheNamed        *memory.Cache `name:"sessions"`
		Stream            *memory.Stream
		StreamNamed       *memory.Stream `name:"events"`
	}
	var got routes
	app := fx.New(fx.NopLogger,
		memory.Module("shop",
			memory.Document[order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}),
			memory.CacheRoute("sessions", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("sessions")}),
			memory.StreamRoute("events", memory.StreamConfig{TenantAware: true, Stream: naming.Shared("events")})),
		fx.Invoke(func(r routes) { got = r }))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if got.Docs == nil || got.Docs != got.DocsNamed || got.Cache == nil || got.Cache != got.CacheNamed || got.Stream == nil || got.Stream != got.StreamNamed {
		t.Fatalf("named and unnamed injections differ: %+v", got)
	}
}
