package kafka

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/tenancy"
)

func TestStampOverridesReservedHeaders(t *testing.T) {
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	b := tenancy.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")
	in := []kafkago.Header{{Key: HeaderTenant, Value: []byte(b.String())}, {Key: HeaderEventID, Value: []byte("forged")},
		{Key: "kind", Value: []byte("created")}}
	hs := stamp(in, a, "", "orders")
	got := map[string][]string{}
	for _, h := range hs {
		got[h.Key] = append(got[h.Key], string(h.Value))
	}
	if len(got[HeaderTenant]) != 1 || got[HeaderTenant][0] != a.String() {
		t.Fatalf("tenant headers %v", got[HeaderTenant])
	}
	if len(got[HeaderEventID]) != 1 || len(got[HeaderEventID][0]) != 32 || got[HeaderEventID][0] == "forged" {
		t.Fatalf("event id headers %v", got[HeaderEventID])
	}
	if got[HeaderStream][0] != "orders" || got["kind"][0] != "created" {
		t.Fatalf("headers %v", got)
	}
	if id, err := TenantFromHeaders(hs); err != nil || id != a {
		t.Fatalf("round trip: %v %v", id, err)
	}
	if hs := stamp(nil, tenancy.ID{}, "e1", ""); len(hs) != 1 || string(hs[0].Value) != "e1" {
		t.Fatalf("unbound stamp %v", hs)
	}
}

func TestEventIDsAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := string(appendEventID(nil))
		if seen[id] {
			t.Fatalf("repeated event id %s", id)
		}
		seen[id] = true
	}
}
