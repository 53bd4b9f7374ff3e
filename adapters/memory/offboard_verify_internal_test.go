package memory

import (
	"context"
	"reflect"
	"testing"

	"github.com/tenantwire/tenantwire/tenancytest"
)

// Every map of store that holds records is a family of memFamilies: a new
// one not declared there would outlive offboarding unseen.
func TestEveryStoreMapIsAFamily(t *testing.T) {
	maps := 0
	for f := range reflect.TypeFor[store]().Fields() {
		if f.Type.Kind() == reflect.Map {
			maps++
		}
	}
	if maps != len(memFamilies) {
		t.Fatalf("store has %d maps of records, memFamilies declares %d: declare the new one", maps, len(memFamilies))
	}
}

// verify finds what offboard did not remove: a tagged document and a
// per-tenant container planted after the teardown, each in its family;
// another tenant's records are not the tenant's.
func TestVerifyFindsPlantedRecords(t *testing.T) {
	s := newStore()
	s.teardown = true
	a, b := tenancytest.TenantA, tenancytest.TenantB
	ctx := context.Background()
	s.docs["orders"] = map[entryKey]docEntry{{tenant: a, key: "o"}: {}, {tenant: b, key: "o"}: {}}
	s.kv["carts."+a.Hex()] = map[entryKey]kvEntry{{key: "k"}: {}}
	if err := s.offboard(ctx, a); err != nil {
		t.Fatal(err)
	}
	e, err := s.verify(ctx, a)
	if err != nil || len(e.Checked) != len(memFamilies) || len(e.Left) != 0 {
		t.Fatalf("after offboard: %+v %v", e, err)
	}
	s.docs["orders"][entryKey{tenant: a, key: "late"}] = docEntry{}
	s.kv["carts."+a.Hex()] = map[entryKey]kvEntry{}
	e, _ = s.verify(ctx, a)
	left := map[string]string{}
	for _, l := range e.Left {
		left[l.Family.Name] = l.Sample
	}
	if len(left) != 2 || left["documents"] != "orders" || left["keys"] != "carts."+a.Hex() {
		t.Fatalf("planted records: %+v", e.Left)
	}
	if e, _ := s.verify(ctx, b); len(e.Left) != 1 || e.Left[0].Family.Name != "documents" {
		t.Fatalf("the other tenant's own record: %+v", e.Left)
	}
}
