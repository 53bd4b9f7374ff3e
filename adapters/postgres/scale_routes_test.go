package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// scaleRoutes are the routes besides documents whose statements are built
// per tenant on a schema-per-tenant module.
type scaleRoutes struct {
	counter *postgres.Counter
	in      *postgres.Inbox
	idem    *postgres.Idempotency
	search  *postgres.Search
	out     *postgres.Outbox
}

// TestNamespaceRoutesManyTenantsPrepareNothing: past the prepared budget a
// tenant's counter, inbox, idempotency, search and outbox statements leave
// nothing prepared on the connection, and each first call of a new tenant
// is one round trip; every operation still works in that mode.
func TestNamespaceRoutesManyTenantsPrepareNothing(t *testing.T) {
	const tenants = 12 // five statement sets each: well past the budget of 32 sets
	prefix := "tw" + unique() + "_"
	pool, writes := countedPool(t)
	var rs scaleRoutes
	c := start(t, postgres.Module("pg", postgres.Use(pool), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.CounterRoute("counter", postgres.CounterConfig{Table: naming.PerTenant("counts")}),
		postgres.InboxRoute("in", postgres.InboxConfig{TenantAware: true, Table: naming.PerTenant("inbox")}),
		postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: true, Table: naming.PerTenant("idem")}),
		postgres.SearchRoute("search", postgres.SearchConfig{Read: naming.PerTenant("texts"), Heap: naming.PerTenant("texts"), Index: naming.PerTenant("texts_tsv")}),
		postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("outbox")}),
	), named("counter", &rs.counter), named("in", &rs.in), named("idem", &rs.idem), named("search", &rs.search), named("out", &rs.out))
	ids := make([]tenancy.ID, tenants+1)
	for i := range ids {
		ids[i] = scaleTenant(1000 + i)
	}
	provision(t, c, ids...)
	t.Cleanup(func() { teardown(t, c, ids...) })
	for i, id := range ids[:tenants] {
		exerciseRoutes(t, tenancy.WithTenant(context.Background(), id), rs, i)
	}

	held := func(schema string) int {
		var n int
		must0(t, pool.QueryRow(context.Background(), "SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements WHERE statement LIKE '%' || $1 || '%'",
			pgx.QueryExecModeSimpleProtocol, schema).Scan(&n))
		return n
	}
	if n := held(postgres.SchemaName(prefix, ids[0])); n == 0 {
		t.Errorf("the first tenant holds no prepared statement: the test does not reach the prepared path")
	}
	for _, id := range ids[tenants-3 : tenants] {
		if n := held(postgres.SchemaName(prefix, id)); n != 0 {
			t.Errorf("tenant %s, past the prepared budget, holds %d prepared statements, want 0", id, n)
		}
	}

	// A new tenant past the budget: each route's first call is one round trip.
	ctx := tenancy.WithTenant(context.Background(), ids[tenants])
	firsts := []struct {
		name string
		call func() error
	}{
		{"counter add", func() error { _, err := rs.counter.Add(ctx, "n", 1); return err }},
		{"inbox mark", func() error { _, err := rs.in.Mark(ctx, "e"); return err }},
		{"idempotency get", func() error { _, _, err := rs.idem.Get(ctx, "k"); return err }},
		{"search put", func() error { return rs.search.Put(ctx, "d", "zebra") }},
		{"outbox write", func() error {
			return rs.out.Write(ctx, outbox.Message{Topic: "t", Payload: []byte("p")})
		}},
	}
	for _, f := range firsts {
		before := writes.Load()
		must0(t, f.call())
		want := int64(1)
		if f.name == "outbox write" {
			want = 3 // BEGIN, the insert, COMMIT
		}
		if n := writes.Load() - before; n != want {
			t.Errorf("%s: a new tenant's first call took %d round trips, want %d", f.name, n, want)
		}
	}
	if n := held(postgres.SchemaName(prefix, ids[tenants])); n != 0 {
		t.Errorf("the new tenant holds %d prepared statements, want 0", n)
	}
}

// exerciseRoutes runs every operation of rs as the tenant bound to ctx and
// checks each result; i makes the values the tenant's own.
func exerciseRoutes(t *testing.T, ctx context.Context, rs scaleRoutes, i int) {
	t.Helper()
	name := fmt.Sprintf("c%d", i)
	if v, err := rs.counter.Add(ctx, name, int64(i+1)); err != nil || v != int64(i+1) {
		t.Fatalf("counter Add = %d, %v", v, err)
	}
	if v, err := rs.counter.Get(ctx, name); err != nil || v != int64(i+1) {
		t.Fatalf("counter Get = %d, %v", v, err)
	}
	if deleted, err := rs.counter.Delete(ctx, name); err != nil || !deleted {
		t.Fatalf("counter Delete = %v, %v", deleted, err)
	}
	if deleted, err := rs.counter.Delete(ctx, name); err != nil || deleted {
		t.Fatalf("counter Delete of a missing counter = %v, %v; want false", deleted, err)
	}

	if fresh, err := rs.in.Mark(ctx, "e1"); err != nil || !fresh {
		t.Fatalf("inbox Mark = %v, %v", fresh, err)
	}
	ran, err := rs.in.Once(ctx, "e1", func(context.Context, pgx.Tx) error { return nil })
	if err != nil || ran {
		t.Fatalf("inbox Once of a marked event = %v, %v", ran, err)
	}
	if seen, err := rs.in.Seen(ctx, "e1"); err != nil || !seen {
		t.Fatalf("inbox Seen = %v, %v", seen, err)
	}
	if n, err := rs.in.Count(ctx); err != nil || n != 1 {
		t.Fatalf("inbox Count = %d, %v", n, err)
	}
	must0(t, rs.in.Forget(ctx, "e1"))
	if err := rs.in.Forget(ctx, "e1"); !errors.Is(err, postgres.ErrNotMarked) {
		t.Fatalf("inbox Forget of a forgotten event: %v", err)
	}

	want := []byte{0, '\\', 'x', byte(i)} // NUL and a backslash survive the text encoding
	res, replayed, err := rs.idem.Do(ctx, "k", func(context.Context) ([]byte, error) { return want, nil })
	if err != nil || replayed || !bytes.Equal(res, want) {
		t.Fatalf("idempotency Do = %q, %v, %v", res, replayed, err)
	}
	res, replayed, err = rs.idem.Do(ctx, "k", func(context.Context) ([]byte, error) { return nil, errors.New("ran twice") })
	if err != nil || !replayed || !bytes.Equal(res, want) {
		t.Fatalf("idempotency replay = %q, %v, %v", res, replayed, err)
	}
	if got, ok, err := rs.idem.Get(ctx, "k"); err != nil || !ok || !bytes.Equal(got, want) {
		t.Fatalf("idempotency Get = %q, %v, %v", got, ok, err)
	}
	if n, err := rs.idem.Count(ctx); err != nil || n != 1 {
		t.Fatalf("idempotency Count = %d, %v", n, err)
	}
	if deleted, err := rs.idem.Delete(ctx, "k"); err != nil || !deleted {
		t.Fatalf("idempotency Delete = %v, %v", deleted, err)
	}

	must0(t, rs.search.Put(ctx, "d1", "zebra crossing"))
	must0(t, rs.search.Put(ctx, "d2", "plain text"))
	if hits, err := rs.search.Search(ctx, "zebra", 5); err != nil || len(hits) != 1 || hits[0].ID != "d1" {
		t.Fatalf("search = %+v, %v", hits, err)
	}
	if n, err := rs.search.Count(ctx, "text"); err != nil || n != 1 {
		t.Fatalf("search Count = %d, %v", n, err)
	}
	must0(t, rs.search.Remove(ctx, "d1"))

	msgs := []outbox.Message{
		{EventID: "a", Topic: "t", Key: []byte("k"), Payload: []byte{0, 1, '\\'}, Headers: map[string]string{"h": name}},
		{EventID: "b", Topic: "t", Payload: []byte("p")}, // no key, no headers: NULLs
	}
	must0(t, rs.out.Write(ctx, msgs...))
	b, err := rs.out.Claim(ctx, 10)
	must0(t, err)
	got := b.Messages()
	slices.SortFunc(got, func(x, y outbox.Message) int { return bytes.Compare([]byte(x.EventID), []byte(y.EventID)) })
	tenant, _ := tenancy.FromContext(ctx)
	if len(got) != 2 || got[0].Tenant != tenant || !bytes.Equal(got[0].Payload, msgs[0].Payload) || !bytes.Equal(got[0].Key, msgs[0].Key) ||
		got[0].Headers["h"] != name || got[1].Key != nil || got[1].Headers != nil {
		t.Fatalf("claimed %+v", got)
	}
	must0(t, b.Complete(ctx, got))
	b, err = rs.out.Claim(ctx, 10)
	must0(t, err)
	if n := len(b.Messages()); n != 0 {
		t.Fatalf("claimed %d messages after completing them all", n)
	}
	b.Abandon(ctx)
}
