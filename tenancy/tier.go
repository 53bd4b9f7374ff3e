package tenancy

import "fmt"

// Tier is how strongly a route separates tenants, weakest first. The zero
// value is None, which as a declared floor means "nothing enforced".
type Tier uint8

const (
	// None: tenants share everything; a deliberately shared resource.
	None Tier = iota
	// Tagged: one container, every record carries a tenant marker that reads
	// filter on and writes stamp.
	Tagged
	// Namespace: one instance, a separate container per tenant, named per
	// request by a resolver.
	Namespace
	// Dedicated: a separate connection or instance per tenant.
	Dedicated
)

// Tiers lists every tier, weakest first.
var Tiers = [...]Tier{None, Tagged, Namespace, Dedicated}

var tierNames = [...]string{"none", "tagged", "namespace", "dedicated"}

// Valid reports whether t is one of the four tiers.
func (t Tier) Valid() bool { return int(t) < len(tierNames) }

// String returns the tier's name, or "tier(N)" for an invalid value.
func (t Tier) String() string {
	if !t.Valid() {
		return fmt.Sprintf("tier(%d)", uint8(t))
	}
	return tierNames[t]
}

// AtLeast reports whether t is as strong as floor.
func (t Tier) AtLeast(floor Tier) bool { return t >= floor }

// ParseTier parses a tier name. An unknown name is an error, never a default.
func ParseTier(s string) (Tier, error) {
	for i, name := range tierNames {
		if s == name {
			return Tier(i), nil
		}
	}
	return None, fmt.Errorf("tenancy: unknown tier %q (want none, tagged, namespace or dedicated)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (t Tier) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("tenancy: cannot marshal invalid %s", t)
	}
	return []byte(tierNames[t]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}
