package tenancy_test

// Tests that pin down boundaries mutation testing found unchecked
// (make mutate; docs/reliability.md).

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func TestTierBoundaries(t *testing.T) {
	for _, tier := range tenancy.Tiers {
		if !tier.Valid() {
			t.Errorf("%v is not Valid", tier)
		}
		if !tier.AtLeast(tier) {
			t.Errorf("%v.AtLeast(%v) = false: a route reaching exactly its floor must pass", tier, tier)
		}
	}
	if tenancy.Namespace.AtLeast(tenancy.Dedicated) {
		t.Error("namespace counted as at least dedicated")
	}
	first := tenancy.Tier(len(tenancy.Tiers))
	if first.Valid() {
		t.Errorf("Tier(%d) is Valid", first)
	}
	if got := first.String(); got != "tier(4)" {
		t.Errorf("Tier(4).String() = %q", got)
	}
	var tier tenancy.Tier
	if err := tier.UnmarshalText([]byte("dedicate")); err == nil {
		t.Error("UnmarshalText accepted an unknown tier name")
	}
}

func TestOriginBoundaries(t *testing.T) {
	first := tenancy.Origin(len(tenancy.Origins))
	if first.Valid() {
		t.Errorf("Origin(%d) is Valid", first)
	}
	if floor, err := first.Floor(); !errors.Is(err, tenancy.CodeStatementOriginUnknown) || floor != tenancy.Dedicated {
		t.Errorf("Origin(3).Floor() = %v, %v; want dedicated and statement_origin_unknown", floor, err)
	}
	if _, err := first.MarshalText(); !errors.Is(err, tenancy.CodeStatementOriginUnknown) {
		t.Errorf("Origin(3).MarshalText() error = %v", err)
	}
	var o tenancy.Origin
	if err := o.UnmarshalText([]byte("Raw")); !errors.Is(err, tenancy.CodeStatementOriginUnknown) {
		t.Errorf("UnmarshalText(Raw) error = %v", err)
	}
	if err := o.UnmarshalText([]byte("raw")); err != nil || o != tenancy.Raw {
		t.Errorf("UnmarshalText(raw) = %v, %v", o, err)
	}
}

// Hex is what every tenant-derived name (schema, key, topic, database) is
// built from: 32 lowercase digits, the canonical form without dashes.
func TestHexIsTheCanonicalFormWithoutDashes(t *testing.T) {
	for _, s := range []string{
		"a1b2c3d4-e5f6-4789-abcd-ef0123456789",
		"00000000-0000-0000-0000-000000000001",
		"ffffffff-ffff-ffff-ffff-fffffffffff0",
		"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
	} {
		id := tenancy.MustParseID(s)
		if got, want := id.Hex(), strings.ReplaceAll(s, "-", ""); got != want {
			t.Errorf("Hex(%s) = %q, want %q", s, got, want)
		}
	}
	a := tenancy.MustParseID("00000000-0000-0000-0000-000000000010")
	b := tenancy.MustParseID("00000000-0000-0000-0000-000000000001")
	if a.Hex() == b.Hex() {
		t.Error("two tenants share a Hex")
	}
}

// ParseID accepts exactly the hex digits in either case: every edge of
// every digit range is in, its neighbour out.
func TestParseIDDigitEdges(t *testing.T) {
	const base = "a1b2c3d4-e5f6-4789-abcd-ef012345678"
	for _, c := range "09afAF" {
		if _, err := tenancy.ParseID(base + string(c)); err != nil {
			t.Errorf("ParseID refused hex digit %q: %v", c, err)
		}
	}
	for _, c := range "/:`g@G" {
		if _, err := tenancy.ParseID(base + string(c)); err == nil {
			t.Errorf("ParseID accepted %q as a hex digit", c)
		}
	}
	if id := tenancy.MustParseID(base + "F"); id.String() != base+"f" {
		t.Errorf("upper-case F parsed to %s", id)
	}
	var id tenancy.ID
	if err := id.UnmarshalText([]byte("not-a-uuid")); !errors.Is(err, tenancy.ErrInvalidID) || !id.IsZero() {
		t.Errorf("UnmarshalText(not-a-uuid) = %v, %v", id, err)
	}
}

func TestErrorMessageLayout(t *testing.T) {
	cases := []struct {
		e    tenancy.Error
		want string
	}{
		{tenancy.Error{Code: tenancy.CodeTenantUnbound, Detail: "no tenant", Fix: "bind one"},
			"tenant_unbound: no tenant (fix: bind one)"},
		{tenancy.Error{Code: tenancy.CodeWiringInvalid, Module: "orders"},
			"wiring_invalid: module=orders"},
		{tenancy.Error{Code: tenancy.CodeWiringInvalid, Route: "orders.doc", Detail: "bad"},
			"wiring_invalid: route=orders.doc: bad"},
		{tenancy.Error{Code: tenancy.CodeWiringInvalid, Backend: "redis", Fix: "f"},
			"wiring_invalid (fix: f)"},
		{tenancy.Error{Code: tenancy.CodeRouteInvalid, Module: "m", Route: "r", Tiers: true,
			Reached: tenancy.Tagged, Required: tenancy.Namespace, Ceiling: tenancy.Dedicated, Origin: tenancy.Compiled},
			"route_invalid: module=m route=r reached=tagged required=namespace ceiling=dedicated origin=compiled"},
		{tenancy.Error{Code: tenancy.CodeRouteInvalid}, "route_invalid"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q\nwant      %q", got, c.want)
		}
	}
}

func TestErrorIsMatchesOnlyItself(t *testing.T) {
	a := &tenancy.Error{Code: tenancy.CodeTenantUnbound}
	b := &tenancy.Error{Code: tenancy.CodeTenantUnbound}
	if !a.Is(a) || a.Is(b) {
		t.Errorf("Is(*Error): self %v, other %v; want true, false", a.Is(a), a.Is(b))
	}
	if a.Is(tenancy.CodeWiringInvalid) || !a.Is(tenancy.CodeTenantUnbound) {
		t.Error("Is(Code) does not compare codes")
	}
}
