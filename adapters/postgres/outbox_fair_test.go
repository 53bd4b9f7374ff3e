package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// drain claims batches of 100 until the outbox is empty, completing each,
// and returns the event ids in the order they were claimed.
func drain(t *testing.T, o *postgres.Outbox) []outbox.Message {
	t.Helper()
	var out []outbox.Message
	for {
		b, err := o.Claim(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		msgs := b.Messages()
		if err := b.Complete(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return out
		}
		out = append(out, msgs...)
	}
}

// TestTenantGlobalClaimServesTenantsInTurn: a tenant-global outbox where
// tenant A has a backlog of 5,000 rows and B then writes one: B's row is
// claimed in the first batch (before, it waited behind all of A's), A's
// rows keep their order, and every row is claimed once.
func TestTenantGlobalClaimServesTenantsInTurn(t *testing.T) {
	var o *postgres.Outbox
	_, c := build(t, postgres.Module("pg", append(direct.dsn(t),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("fair_" + unique())}))...), named("out", &o))
	a, b := tenancytest.TenantA, tenancytest.TenantB
	provision(t, c, a)
	for w := range 5 {
		msgs := make([]outbox.Message, 1000)
		for i := range msgs {
			msgs[i] = outbox.Message{EventID: fmt.Sprintf("a-%05d", w*1000+i), Topic: "t"}
		}
		if err := o.Write(tenancy.WithTenant(context.Background(), a), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	bRows := fill(t, o, 1, b)
	got := drain(t, o)
	if len(got) != 5001 {
		t.Fatalf("%d rows claimed, want 5,001", len(got))
	}
	for i, m := range got {
		if _, ok := bRows[m.EventID]; ok {
			if i >= 100 {
				t.Fatalf("B's row was claimed after %d of A's: A's backlog delayed it", i)
			}
			t.Logf("B's row claimed at position %d of 5,001", i)
		}
	}
	seen := map[string]bool{}
	var prev string
	for _, m := range got {
		if seen[m.EventID] {
			t.Fatalf("%s claimed twice", m.EventID)
		}
		seen[m.EventID] = true
		if m.Tenant == a {
			if m.EventID < prev {
				t.Fatalf("A's rows out of order: %s after %s", m.EventID, prev)
			}
			prev = m.EventID
		}
	}
}

// TestTenantGlobalClaimReachesEveryTenant: 300 tenants with three rows
// each and batches of 100: the first three batches claim one row of every
// tenant, so no tenant waits for others' second rows.
func TestTenantGlobalClaimReachesEveryTenant(t *testing.T) {
	var o *postgres.Outbox
	_, c := build(t, postgres.Module("pg", append(direct.dsn(t),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("fair_" + unique())}))...), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	ids := make([]tenancy.ID, 300)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("%08x-0000-4000-a000-000000000001", (i*2654435761)%(1<<32)))
	}
	fill(t, o, 3, ids...)
	got := drain(t, o)
	if len(got) != 900 {
		t.Fatalf("%d rows claimed, want 900", len(got))
	}
	first := map[tenancy.ID]bool{}
	for _, m := range got[:300] {
		first[m.Tenant] = true
	}
	if len(first) != 300 {
		t.Fatalf("the first 300 rows claimed come from %d tenants, want all 300", len(first))
	}
}
