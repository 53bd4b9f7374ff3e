package outbox_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

func TestBindAndFunc(t *testing.T) {
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	var got []string
	dest := outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
		if id, ok := tenancy.FromContext(ctx); ok {
			got = append(got, id.String())
		} else if tenancy.IsGlobal(ctx) {
			got = append(got, "global")
		}
		return nil
	})
	for _, m := range []outbox.Message{{Tenant: a, EventID: "1"}, {EventID: "2"}} {
		if err := dest.Deliver(outbox.Bind(context.Background(), m), m); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0] != a.String() || got[1] != "global" {
		t.Fatalf("bound contexts: %v", got)
	}
}
