package mongo_test

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A refused collection name says how to rename it, not "fix the
// collection".
func TestCollectionRefusalSaysWhatToChange(t *testing.T) {
	for name, c := range map[string]mongo.Collection{
		"dollar":         mongo.Static("a$b"),
		"system":         mongo.Static("system_x"),
		"long db prefix": mongo.PerTenantDatabase("p234567890123456789012345678901", "c"),
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
				mongo.Module("m", mongo.FromGraph(), mongo.Database("app"), mongo.CounterRoute("c", mongo.RouteConfig{Collection: c})))
			if !strings.Contains(e.Fix, "rename the collection") || !strings.Contains(e.Fix, `not starting with "system"`) {
				t.Errorf("fix %q", e.Fix)
			}
		})
	}
}
