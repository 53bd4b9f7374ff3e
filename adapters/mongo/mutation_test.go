package mongo

// Tests that pin down naming code mutation testing found unchecked (make
// mutate; docs/reliability.md).

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// resolve is where a route applies the tenant to its container names.
func TestCollectionResolve(t *testing.T) {
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	const hex = "0a0a0a0a00004000800000000000000a"
	cases := []struct {
		c                collection
		perTenant        bool
		wantDB, wantColl string
		wantRelation     string
		wantRelPerTenant bool
	}{
		{collectionOf(RouteConfig{Collection: naming.Shared("orders")}), true, "app", "orders", "orders", false},
		{collectionOf(RouteConfig{Collection: naming.PerTenant("orders")}), true, "app", "orders." + hex, "orders.*", true},
		{collectionOf(RouteConfig{Collection: naming.Shared("orders"), Database: naming.PerTenant("acme")}), true, "acme_" + hex, "orders", "acme_*.orders", true},
		{collectionOf(RouteConfig{Collection: naming.PerTenant("orders")}), false, "app", "orders", "orders.*", true},
		{collectionOf(RouteConfig{Collection: naming.Shared("orders"), Database: naming.PerTenant("acme")}), false, "app", "orders", "acme_*.orders", true},
	}
	for _, c := range cases {
		db, coll := c.c.resolve("app", id, c.perTenant)
		if db != c.wantDB || coll != c.wantColl {
			t.Errorf("%+v.resolve(perTenant=%v) = %q, %q; want %q, %q", c.c, c.perTenant, db, coll, c.wantDB, c.wantColl)
		}
		rel := c.c.relation("read")
		if rel.Name != c.wantRelation || rel.PerTenant != c.wantRelPerTenant || rel.Role != "read" {
			t.Errorf("%+v.relation = %+v; want name %q, per-tenant %v", c.c, rel, c.wantRelation, c.wantRelPerTenant)
		}
	}
}

// The longest names accepted are exactly the ones MongoDB still takes.
func TestNameBounds(t *testing.T) {
	if err := validBase("collection", strings.Repeat("c", 64), 64); err != nil {
		t.Errorf("a 64-character base refused: %v", err)
	}
	if err := validBase("collection", strings.Repeat("c", 65), 64); err == nil {
		t.Error("a 65-character base accepted")
	}
	longest := strings.Repeat("p", 30)
	if err := collectionOf(RouteConfig{Collection: naming.Shared("orders"), Database: naming.PerTenant(longest)}).validate(); err != nil {
		t.Errorf("a 30-character database prefix refused: %v", err)
	}
	if err := ValidDatabaseName(DatabaseName(longest, tenancy.Default)); err != nil {
		t.Errorf("the longest prefix makes an invalid database name: %v", err)
	}
	if err := collectionOf(RouteConfig{Collection: naming.Shared("orders"), Database: naming.PerTenant(longest + "p")}).validate(); err == nil {
		t.Error("a 31-character database prefix accepted: its names would pass MongoDB's 63 bytes")
	}
}

// Every edge of every allowed range is in, its neighbours out.
func TestValidBaseAlphabetEdges(t *testing.T) {
	for _, ok := range []string{"az", "AZ", "09", "_-"} {
		if err := validBase("collection", ok, 64); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, c := range "`{@[/:" {
		if validBase("collection", "a"+string(c), 64) == nil {
			t.Errorf("%q accepted", "a"+string(c))
		}
	}
	if err := ValidCollectionName(strings.Repeat("c", 255)); err != nil {
		t.Errorf("a 255-byte collection name refused: %v", err)
	}
	if ValidCollectionName(strings.Repeat("c", 256)) == nil {
		t.Error("a 256-byte collection name accepted")
	}
	if err := ValidDatabaseName(strings.Repeat("d", 63)); err != nil {
		t.Errorf("a 63-byte database name refused: %v", err)
	}
}
