package tenancy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func TestTierParseStringRoundTrip(t *testing.T) {
	for i, tier := range tenancy.Tiers {
		got, err := tenancy.ParseTier(tier.String())
		if err != nil || got != tier {
			t.Fatalf("ParseTier(%q) = %v, %v", tier, got, err)
		}
		if i > 0 && !(tenancy.Tiers[i-1] < tier) {
			t.Fatalf("tiers out of order at %v", tier)
		}
		b, err := json.Marshal(struct{ T tenancy.Tier }{tier})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ T tenancy.Tier }
		if err := json.Unmarshal(b, &back); err != nil || back.T != tier {
			t.Fatalf("JSON round trip of %v: %s -> %v, %v", tier, b, back.T, err)
		}
	}
	for _, bad := range []string{"", "None", "TAGGED", "shared", "namespace ", "dedicated\x00"} {
		if _, err := tenancy.ParseTier(bad); err == nil {
			t.Errorf("ParseTier(%q) accepted an unknown name", bad)
		}
	}
	if _, err := tenancy.Tier(9).MarshalText(); err == nil {
		t.Error("an invalid tier marshalled")
	}
	if !tenancy.Dedicated.AtLeast(tenancy.Namespace) || tenancy.Tagged.AtLeast(tenancy.Namespace) {
		t.Error("AtLeast ordering is wrong")
	}
}

func TestParseID(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000001"},
		{"A1B2C3D4-E5F6-4789-ABCD-EF0123456789", "a1b2c3d4-e5f6-4789-abcd-ef0123456789"},
		{"a1b2c3d4-e5f6-4789-abcd-ef0123456789", "a1b2c3d4-e5f6-4789-abcd-ef0123456789"},
	}
	for _, c := range cases {
		id, err := tenancy.ParseID(c.in)
		if err != nil || id.String() != c.want {
			t.Errorf("ParseID(%q) = %q, %v; want %q", c.in, id, err, c.want)
		}
	}
	bad := []string{
		"", "00000000-0000-0000-0000-000000000000", "{a1b2c3d4-e5f6-4789-abcd-ef0123456789}",
		"urn:uuid:a1b2c3d4-e5f6-4789-abcd-ef0123456789", "a1b2c3d4e5f64789abcdef0123456789",
		"a1b2c3d4-e5f6-4789-abcd-ef012345678", "a1b2c3d4-e5f6-4789-abcd-ef01234567890",
		"a1b2c3d4-e5f6-4789-abcd_ef0123456789", "g1b2c3d4-e5f6-4789-abcd-ef0123456789",
		" a1b2c3d4-e5f6-4789-abcd-ef012345678", "a1b2c3d4-e5f6-4789-abcd-ef01234567\u00e9",
	}
	for _, in := range bad {
		if id, err := tenancy.ParseID(in); err == nil || !errors.Is(err, tenancy.ErrInvalidID) {
			t.Errorf("ParseID(%q) = %v, %v; want ErrInvalidID", in, id, err)
		}
	}
	if tenancy.Default.String() != "00000000-0000-0000-0000-000000000001" || !tenancy.Default.IsDefault() {
		t.Errorf("default tenant is %q", tenancy.Default)
	}
	var zero tenancy.ID
	if !zero.IsZero() || zero.String() != "" {
		t.Error("zero ID is not reported as zero")
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Error("the zero ID marshalled")
	}
	if _, err := tenancy.IDFromBytes([16]byte{}); err == nil {
		t.Error("IDFromBytes accepted the nil UUID")
	}
}

// Every dash of the canonical form is checked where it stands: moving any
// of the four one place left or right keeps the length and the count of
// hex digits, and must still be refused; so must a dash dropped or added.
func TestParseIDDashPlacement(t *testing.T) {
	const good = "a1b2c3d4-e5f6-4789-abcd-ef0123456789"
	if _, err := tenancy.ParseID(good); err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, at := range []int{8, 13, 18, 23} {
		if good[at] != '-' {
			t.Fatalf("no dash at %d", at)
		}
		for _, to := range []int{at - 1, at + 1} {
			b := []byte(good)
			b[at], b[to] = b[to], b[at] // the dash trades places with a digit
			bad = append(bad, string(b))
		}
		bad = append(bad,
			good[:at]+good[at+1:],                    // dash missing: 35 characters
			good[:at]+good[at+1:]+"0",                // dash missing, length kept
			good[:at]+"-"+good[at:],                  // dash doubled: 37 characters
			good[:at]+"-"+good[at+1:len(good)-1]+"-", // an extra dash replaces a digit
			good[:at]+"0"+good[at+1:],                // a digit where the dash was
		)
	}
	bad = append(bad, "-"+good[1:], good[:35]+"-", "a1b2c3d4-e5f6-4789-ab-d-ef0123456789")
	for _, in := range bad {
		if in == good {
			t.Fatalf("case %q is the good form", in)
		}
		if id, err := tenancy.ParseID(in); !errors.Is(err, tenancy.ErrInvalidID) {
			t.Errorf("ParseID(%q) = %v, %v; want ErrInvalidID", in, id, err)
		}
	}
	// Upper and mixed case are accepted and mean the lowercase tenant.
	for _, in := range []string{strings.ToUpper(good), "A1b2C3d4-E5f6-4789-aBcD-Ef0123456789"} {
		id, err := tenancy.ParseID(in)
		if err != nil || id.String() != good || id != tenancy.MustParseID(good) {
			t.Errorf("ParseID(%q) = %q, %v; want %q", in, id, err, good)
		}
	}
}

func TestBinding(t *testing.T) {
	a := tenancy.MustParseID("a1b2c3d4-e5f6-4789-abcd-ef0123456789")
	ctx := context.Background()

	if _, ok := tenancy.FromContext(ctx); ok {
		t.Fatal("an empty context reported a tenant")
	}
	_, err := tenancy.Require(ctx)
	if !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("Require on an unbound context = %v, want tenant_unbound", err)
	}

	bound := tenancy.WithTenant(ctx, a)
	if id, err := tenancy.Require(bound); err != nil || id != a {
		t.Fatalf("Require = %v, %v; want %v", id, err, a)
	}
	if tenancy.IsGlobal(bound) {
		t.Fatal("a tenant-bound context reported global")
	}

	global := tenancy.WithGlobal(bound)
	if !tenancy.IsGlobal(global) {
		t.Fatal("WithGlobal did not mark the context")
	}
	if _, err := tenancy.Require(global); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("the tenant-global scope satisfied Require: %v", err)
	}
	if _, ok := tenancy.FromContext(global); ok {
		t.Fatal("the tenant-global scope leaked the outer tenant")
	}

	defer func() {
		if recover() == nil {
			t.Fatal("WithTenant accepted the zero ID")
		}
	}()
	tenancy.WithTenant(ctx, tenancy.ID{})
}

func TestEveryOriginHasExactlyOneFloor(t *testing.T) {
	want := map[tenancy.Origin]tenancy.Tier{
		tenancy.Structured: tenancy.None,
		tenancy.Compiled:   tenancy.Namespace,
		tenancy.Raw:        tenancy.Dedicated,
	}
	if len(want) != len(tenancy.Origins) {
		t.Fatalf("test knows %d origins, package has %d", len(want), len(tenancy.Origins))
	}
	for _, o := range tenancy.Origins {
		floor, err := o.Floor()
		if err != nil {
			t.Fatalf("%v: %v", o, err)
		}
		again, _ := o.Floor()
		if floor != want[o] || again != floor {
			t.Errorf("%v floor = %v, want %v", o, floor, want[o])
		}
		parsed, err := tenancy.ParseOrigin(o.String())
		if err != nil || parsed != o {
			t.Errorf("ParseOrigin(%q) = %v, %v", o, parsed, err)
		}
	}
	if _, err := tenancy.Origin(7).Floor(); !errors.Is(err, tenancy.CodeStatementOriginUnknown) {
		t.Errorf("unknown origin floor error = %v", err)
	}
	if _, err := tenancy.ParseOrigin("verified"); !errors.Is(err, tenancy.CodeStatementOriginUnknown) {
		t.Errorf("ParseOrigin(verified) error = %v", err)
	}
}

func TestErrorIsAsThroughWrapping(t *testing.T) {
	e := &tenancy.Error{
		Code: tenancy.ValidationFailed("postgres"), Module: "orders", Backend: "postgres",
		Route: "orders.document", Tiers: true, Reached: tenancy.Tagged, Required: tenancy.Namespace,
		Ceiling: tenancy.Dedicated, Fix: "resolve a schema per tenant",
	}
	wrapped := fmt.Errorf("fx.New: %w", errors.Join(errors.New("other"), e))
	var got *tenancy.Error
	if !errors.As(wrapped, &got) || got != e {
		t.Fatal("errors.As did not find the coded error")
	}
	if !errors.Is(wrapped, tenancy.Code("postgres_tenancy_validation_failed")) {
		t.Fatal("errors.Is did not match the code")
	}
	if errors.Is(wrapped, tenancy.ErrCapabilityMismatch) {
		t.Fatal("a wiring gap matched ErrCapabilityMismatch")
	}
	e.CapabilityMismatch = true
	if !errors.Is(wrapped, tenancy.ErrCapabilityMismatch) {
		t.Fatal("a capability mismatch did not match ErrCapabilityMismatch")
	}
	msg := e.Error()
	for _, part := range []string{"postgres_tenancy_validation_failed", "module=orders", "route=orders.document", "reached=tagged", "required=namespace", "fix: resolve"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
	if codes := tenancy.Codes(wrapped); len(codes) != 1 || codes[0] != e.Code {
		t.Errorf("Codes = %v", codes)
	}
}
