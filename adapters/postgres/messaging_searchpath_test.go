package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestMessagingIgnoresSearchPath: the outbox, inbox, idempotency and
// ownership statements name their tables schema-qualified. A session whose
// search_path starts with a schema holding same-named tables (seeded with
// rows of their own) still reads and writes the provisioned tables, and
// the shadowing tables are left as they were.
func TestMessagingIgnoresSearchPath(t *testing.T) {
	url := testsvc.PostgresURL(t)
	run := unique()
	shadow := "sh_" + run
	out, in, idem, own := "sp_out_"+run, "sp_in_"+run, "sp_idem_"+run, "sp_own_"+run
	mod := func(dsn string, extra ...postgres.Option) (*postgres.Client, *postgres.Outbox, *postgres.Inbox, *postgres.Idempotency) {
		var (
			o  *postgres.Outbox
			i  *postgres.Inbox
			st *postgres.Idempotency
		)
		c := start(t, postgres.Module("pg", append([]postgres.Option{postgres.Connect(dsn),
			postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared(out)}),
			postgres.InboxRoute("in", postgres.InboxConfig{TenantAware: true, Table: naming.Shared(in)}),
			postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: true, Table: naming.Shared(idem)}),
		}, extra...)...), named("out", &o), named("in", &i), named("idem", &st))
		return c, o, i, st
	}
	// Provision with the default search_path, then shadow every table.
	plain, _, _, _ := mod(url)
	provision(t, plain, tenancytest.TenantA)
	conn := superuser(t)
	a, b := tenancytest.TenantA.String(), tenancytest.TenantB.String()
	exec(t, conn, "CREATE TABLE public."+own+" (tenant_id uuid NOT NULL, id text NOT NULL)")
	exec(t, conn, "INSERT INTO public."+own+" VALUES ($1, 'm1')", a)
	exec(t, conn, "CREATE SCHEMA "+shadow)
	for _, tb := range []string{out, in, idem, own} {
		exec(t, conn, "CREATE TABLE "+shadow+"."+tb+" (LIKE public."+tb+" INCLUDING ALL)")
	}
	exec(t, conn, "INSERT INTO "+shadow+"."+out+" (tenant_id, event_id, topic) VALUES ($1, 'shadow-ev', 't')", a)
	exec(t, conn, "INSERT INTO "+shadow+"."+out+" (tenant_id, event_id, topic, delivered_at) VALUES ($1, 'shadow-old', 't', now() - interval '1 day')", a)
	exec(t, conn, "INSERT INTO "+shadow+"."+in+" (tenant_id, event_id) VALUES ($1, 'shadow-mark')", a)
	exec(t, conn, "INSERT INTO "+shadow+"."+idem+" (tenant_id, key, result, expires_at) VALUES ($1, 'k', 'shadow', now() + interval '1 hour')", a)
	exec(t, conn, "INSERT INTO "+shadow+"."+own+" VALUES ($1, 'm1')", b)

	c, o, i, st := mod(url+"&search_path="+shadow+",public",
		postgres.Sweep("out", postgres.SweepConfig{Retain: time.Millisecond, Every: 20 * time.Millisecond}))
	// Outbox: write, claim, complete.
	if err := o.Write(bgA, outbox.Message{EventID: "e1", Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	batch, got := claimAll(t, o, bgA)
	if msgs := got[tenancytest.TenantA]; len(msgs) != 1 || msgs[0].EventID != "e1" {
		t.Errorf("claimed %+v, want only e1", batch.Messages())
	}
	if err := batch.Complete(context.Background(), batch.Messages()); err != nil {
		t.Fatal(err)
	}
	// Inbox: the shadow's mark is not seen; a new mark lands in public.
	if seen, err := i.Seen(bgA, "shadow-mark"); err != nil || seen {
		t.Errorf("inbox read the shadowing table: seen=%v err=%v", seen, err)
	}
	if fresh, err := i.Mark(bgA, "m"); err != nil || !fresh {
		t.Errorf("mark: %v %v", fresh, err)
	}
	if n, err := i.Count(bgA); err != nil || n != 1 {
		t.Errorf("inbox count %d %v, want 1", n, err)
	}
	// Idempotency: the shadow's result is not replayed.
	v, replayed, err := st.Do(bgA, "k", func(context.Context) ([]byte, error) { return []byte("public"), nil })
	if err != nil || replayed || string(v) != "public" {
		t.Errorf("idempotency read the shadowing table: %q replayed=%v err=%v", v, replayed, err)
	}
	if n, err := st.Count(bgA); err != nil || n != 1 {
		t.Errorf("idempotency count %d %v, want 1", n, err)
	}
	// Ownership: public says A owns m1, the shadow says B.
	g := c.Ownership(postgres.OwnershipConfig{Table: naming.Shared(own), TenantAware: true})
	if err := g.Check(bgA, "m1"); err != nil {
		t.Errorf("owner denied: %v", err)
	}
	if err := g.Check(bgB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("the shadowing table's owner allowed: %v", err)
	}
	// Deletes and sweeps run on the provisioned tables too.
	if err := i.Forget(bgA, "m"); err != nil {
		t.Errorf("forget: %v", err)
	}
	if deleted, err := st.Delete(bgA, "k"); err != nil || !deleted {
		t.Errorf("delete: %v, %v", deleted, err)
	}
	count := func(q string) (n int) {
		t.Helper()
		if err := conn.QueryRow(context.Background(), q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The sweep removes the delivered e1 from public, not the shadow's
	// long-delivered row.
	deadline := time.Now().Add(5 * time.Second)
	for count("SELECT count(*) FROM public."+out) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sweep never removed the delivered public row")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for tb, want := range map[string]int{out: 2, in: 1, idem: 1, own: 1} {
		if n := count("SELECT count(*) FROM " + shadow + "." + tb); n != want {
			t.Errorf("shadowing %s holds %d rows, want its %d seeded", tb, n, want)
		}
	}
	if n := count("SELECT count(*) FROM " + shadow + "." + out + " WHERE delivered_at IS NULL"); n != 1 {
		t.Error("a shadowing outbox row was marked delivered")
	}
}
