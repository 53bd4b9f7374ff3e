package tenancy_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

var sinkID tenancy.ID

// BenchmarkFromContext guards a zero-allocation hot path: reading the tenant
// from a context.
func BenchmarkFromContext(b *testing.B) {
	ctx := tenancy.WithTenant(context.Background(), tenancy.Default)
	b.ReportAllocs()
	for b.Loop() {
		id, ok := tenancy.FromContext(ctx)
		if !ok {
			b.Fatal("unbound")
		}
		sinkID = id
	}
}

// BenchmarkParseID guards a zero-allocation hot path: parsing a tenant ID.
func BenchmarkParseID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		id, err := tenancy.ParseID("A1B2C3D4-E5F6-4789-ABCD-EF0123456789")
		if err != nil {
			b.Fatal(err)
		}
		sinkID = id
	}
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	ctx := tenancy.WithTenant(context.Background(), tenancy.Default)
	if n := testing.AllocsPerRun(100, func() { sinkID, _ = tenancy.FromContext(ctx) }); n != 0 {
		t.Errorf("FromContext allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { sinkID, _ = tenancy.ParseID("a1b2c3d4-e5f6-4789-abcd-ef0123456789") }); n != 0 {
		t.Errorf("ParseID allocates %v times", n)
	}
}
