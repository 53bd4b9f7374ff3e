package mongo_test

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A refused collection name says how to rename it, not "fix the
// collection".
func TestCollectionRefusalSaysWhatToChange(t *testing.T) {
	for name, c := range map[string]mongo.RouteConfig{
		"dollar":         {Collection: naming.Shared("a$b")},
		"system":         {Collection: naming.Shared("system_x")},
		"long db prefix": {Collection: naming.Shared("c"), Database: naming.PerTenant("p234567890123456789012345678901")},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
				mongo.Module("m", modules.FromGraph(), mongo.Database("app"), mongo.CounterRoute("c", c)))
			if !strings.Contains(e.Fix, "rename the collection") || !strings.Contains(e.Fix, `not starting with "system"`) {
				t.Errorf("fix %q", e.Fix)
			}
		})
	}
}

// MongoDB spells per-tenant names itself: a resolver of the caller's own,
// or a shared database other than the module's, is refused rather than
// read as something else.
func TestNamesMongoDoesNotSpellAreRefused(t *testing.T) {
	custom := naming.Func(func(id tenancy.ID) (string, error) { return "c" + id.Hex(), nil })
	for name, rc := range map[string]mongo.RouteConfig{
		"custom collection": {Collection: custom},
		"custom database":   {Collection: naming.Shared("c"), Database: custom},
		"shared database":   {Collection: naming.Shared("c"), Database: naming.Shared("other")},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
				mongo.Module("m", modules.FromGraph(), mongo.Database("app"), mongo.CounterRoute("c", rc)))
			if !strings.Contains(e.Detail, "naming.PerTenant") {
				t.Errorf("detail %q", e.Detail)
			}
		})
	}
}
