package naming_test

import (
	"testing"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestShapes: each constructor gives the shape adapters read, and names
// compare with == (adapters compare a route's relations).
func TestShapes(t *testing.T) {
	fn := func(id tenancy.ID) (string, error) { return "x" + id.Hex(), nil }
	custom := naming.Func(fn)
	for name, c := range map[string]struct {
		n         naming.Name
		base      string
		perTenant bool
		zero      bool
		custom    bool
	}{
		"zero":       {naming.Name{}, "", false, true, false},
		"shared":     {naming.Shared("orders"), "orders", false, false, false},
		"per tenant": {naming.PerTenant("orders"), "orders", true, false, false},
		"func":       {custom, "", true, false, true},
	} {
		if c.n.Base() != c.base || c.n.PerTenant() != c.perTenant || c.n.IsZero() != c.zero || (c.n.Func() != nil) != c.custom {
			t.Errorf("%s: base %q, per tenant %v, zero %v, func %v", name, c.n.Base(), c.n.PerTenant(), c.n.IsZero(), c.n.Func() != nil)
		}
	}
	if got, err := custom.Func()(tenancy.Default); err != nil || got != "x"+tenancy.Default.Hex() {
		t.Errorf("Func() = %q, %v", got, err)
	}
	a, b, again := naming.Shared("a"), naming.PerTenant("a"), custom
	if a != naming.Shared("a") || a == b || again != custom || custom == naming.Func(fn) {
		t.Error("names compare by shape, and a Func by identity")
	}
}
