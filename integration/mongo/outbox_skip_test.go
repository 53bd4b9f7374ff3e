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
// the zero ID is parked; the others' rows come in turn, each tenant's in
// its order.
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
	if got := fmt.Sprint(claim(a)); got != "[g-0 b-0 g-1 b-1]" {
		t.Errorf("skipping A: %s", got)
	}
	if got := fmt.Sprint(claim(a, tenancy.ID{})); got != "[b-0 b-1 b-2]" {
		t.Errorf("skipping A and the deployment-wide rows: %s", got)
	}
	// Skipping none: A's six oldest rows do not fill the batch ahead of
	// the deployment-wide rows and B's.
	if got := fmt.Sprint(claim()); got != "[a-0 g-0 b-0 a-1]" {
		t.Errorf("skipping none: %s", got)
	}
}

// TestOutboxClaimServesTenantsInTurn: a tenant-global outbox where tenant
// A has a backlog of 200 rows and B then writes one: B's row is in the
// first claim of 50, second (in id order it would wait for all of A's),
// A's rows keep their order, and every row is claimed once.
func TestOutboxClaimServesTenantsInTurn(t *testing.T) {
	var o *mongo.Outbox
	start(t, mongo.Module("m", append(plain(t),
		mongo.OutboxRoute("events", mongo.RouteConfig{Collection: naming.Shared("turns")}))...),
		named("events", &o))
	a, b := tenancytest.TenantA, tenancytest.TenantB
	msgs := make([]outbox.Message, 200)
	for i := range msgs {
		msgs[i] = outbox.Message{EventID: fmt.Sprintf("a-%03d", i), Topic: "t"}
	}
	if err := o.Write(ctxOf(a), msgs...); err != nil {
		t.Fatal(err)
	}
	if err := o.Write(ctxOf(b), outbox.Message{EventID: "b-0", Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	var got []outbox.Message
	for {
		batch, err := o.Claim(context.Background(), 50)
		if err != nil {
			t.Fatal(err)
		}
		ms := batch.Messages()
		if err := batch.Complete(context.Background(), ms); err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			break
		}
		got = append(got, ms...)
	}
	if len(got) != 201 {
		t.Fatalf("%d rows claimed, want 201", len(got))
	}
	seen := map[string]bool{}
	prev := ""
	for i, m := range got {
		if seen[m.EventID] {
			t.Fatalf("%s claimed twice", m.EventID)
		}
		seen[m.EventID] = true
		switch m.Tenant {
		case b:
			if i > 1 {
				t.Errorf("B's row claimed at position %d, behind %d of A's", i, i)
			}
		case a:
			if m.EventID < prev {
				t.Fatalf("A's rows out of order: %s after %s", m.EventID, prev)
			}
			prev = m.EventID
		}
	}
}
