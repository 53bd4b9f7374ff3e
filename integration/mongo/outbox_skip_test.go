package mongo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOutboxClaimSkipsParkedTenants: the claim a relay makes while
// tenants are parked leaves their rows out, even when they are the oldest
// and fill more than a batch, and leaves the deployment-wide rows out when
// the zero ID is parked; the others' rows come in their order.
func TestOutboxClaimSkipsParkedTenants(t *testing.T) {
	var o *mongo.Outbox
	start(t, mongo.Module("m", append(plain(t),
		mongo.OutboxRoute("events", mongo.RouteConfig{Collection: naming.Shared("skip")}))...),
		named("events", &o))
	a, b := tenancytest.TenantA, tenancytest.TenantB
	write := func(ctx context.Context, tag string, n int) {
		for i := range n {
			if err := o.Write(ctx, outbox.Message{EventID: fmt.Sprintf("%s-%d", tag, i), Topic: "t"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(ctxOf(a), "a", 6)
	write(tenancy.WithGlobal(context.Background()), "g", 2)
	write(ctxOf(b), "b", 3)
	claim := func(skip ...tenancy.ID) []string {
		batch, err := o.ClaimSkipping(context.Background(), 4, skip)
		if err != nil {
			t.Fatal(err)
		}
		defer batch.Abandon(context.Background())
		var out []string
		for _, m := range batch.Messages() {
			out = append(out, m.EventID)
		}
		return out
	}
	if got := fmt.Sprint(claim(a)); got != "[g-0 g-1 b-0 b-1]" {
		t.Errorf("skipping A: %s", got)
	}
	if got := fmt.Sprint(claim(a, tenancy.ID{})); got != "[b-0 b-1 b-2]" {
		t.Errorf("skipping A and the deployment-wide rows: %s", got)
	}
	if got := fmt.Sprint(claim()); got != "[a-0 a-1 a-2 a-3]" {
		t.Errorf("skipping none: %s", got)
	}
}
