package soak_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestSoakDedicatedChecker: the dedicated leg's raw check fails on what
// it is there to catch. Three tenants (the first and third on the first
// server, the second on the second) each write two documents and two
// delivered outbox rows through the routed module; then a missing
// document, another tenant's document or outbox row in a tenant's
// database, an outbox row twice, databases on the wrong servers and a
// database of no tenant each have to show.
func TestSoakDedicatedChecker(t *testing.T) {
	pgs := startPrivatePGs(t, 2)
	ids := soakTenants(3)
	p := newPlacement([]string{pgs[0].port, pgs[1].port}, ids)
	if err := createDedicatedDatabases(t, p, pgs, ids)(); err != nil {
		t.Fatal(err)
	}
	var d struct {
		fx.In
		Client *postgres.Client          `name:"soakded"`
		Docs   *postgres.Documents[Body] `name:"ded_docs"`
		Out    *postgres.Outbox          `name:"ded_outbox"`
	}
	app := fx.New(fx.NopLogger, dedOptions(p, "soak-check"), fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	if err := provisionDedicated(ctx, d.Client, p, pgs, ids); err != nil {
		t.Fatal(err)
	}
	sent := map[tenancy.ID]int{}
	for _, id := range ids {
		bound := tenancy.WithTenant(ctx, id)
		for seq := 1; seq <= 2; seq++ {
			b := Body{Tenant: id.String(), Seq: seq}
			body, _ := json.Marshal(b)
			if _, err := d.Docs.Create(bound, fmt.Sprintf("doc-%d", seq), b); err != nil {
				t.Fatal(err)
			}
			if err := d.Out.Write(bound, outbox.Message{EventID: fmt.Sprintf("evt-%d", seq), Topic: streamDedicated, Payload: body}); err != nil {
				t.Fatal(err)
			}
		}
		sent[id] = 2
		if err := onServer(pgs, p, id, "UPDATE public."+dedOutbox+" SET delivered_at = now()"); err != nil {
			t.Fatal(err)
		}
	}
	a, b := ids[0], ids[1]
	bodyOf := func(id tenancy.ID, seq int) string { return fmt.Sprintf(`{"tenant": %q, "seq": %d}`, id.String(), seq) }

	run := func(p placement, tenants []tenancy.ID) (docs, out *tally, err error) {
		var got []*tally
		err = checkDedicatedRaw(ctx, p, pgs, sent, tenants, func(t *tally) *tally { got = append(got, t); return t })
		if err == nil {
			docs, out = got[0], got[1]
		}
		return docs, out, err
	}
	if docs, out, err := run(p, ids); err != nil || docs.failed() || out.failed() || docs.delivered != 6 || out.delivered != 6 {
		t.Fatalf("untouched: %v, %+v, %+v", err, docs, out)
	}
	for _, c := range []struct {
		name     string
		do, undo string
		owner    tenancy.ID
		want     func(docs, out *tally) bool
	}{
		{"a document missing", "DELETE FROM public.ded_docs WHERE id = 'doc-2'",
			"INSERT INTO public.ded_docs (id, version, value) VALUES ('doc-2', 1, '" + bodyOf(a, 2) + "')", a,
			func(docs, _ *tally) bool { return docs.missing == 1 }},
		{"another tenant's document", "INSERT INTO public.ded_docs (id, version, value) VALUES ('doc-3', 1, '" + bodyOf(b, 3) + "')",
			"DELETE FROM public.ded_docs WHERE id = 'doc-3'", a,
			func(docs, _ *tally) bool { return docs.cross == 1 }},
		{"a document under an id its body does not name", "UPDATE public.ded_docs SET id = 'doc-9' WHERE id = 'doc-1'",
			"UPDATE public.ded_docs SET id = 'doc-1' WHERE id = 'doc-9'", a,
			func(docs, _ *tally) bool { return docs.cross == 1 && docs.missing == 1 }},
		{"another tenant's outbox row", "INSERT INTO public.ded_outbox (tenant_id, event_id, topic, payload, delivered_at) VALUES ('" +
			b.String() + "', 'evt-1', 'dedicated', convert_to('" + bodyOf(b, 1) + "', 'UTF8'), now())",
			"DELETE FROM public.ded_outbox WHERE tenant_id = '" + b.String() + "'", a,
			func(_, out *tally) bool { return out.cross == 1 }},
		{"an outbox row whose body names another tenant", "UPDATE public.ded_outbox SET payload = convert_to('" + bodyOf(b, 2) + "', 'UTF8') WHERE event_id = 'evt-2'",
			"UPDATE public.ded_outbox SET payload = convert_to('" + bodyOf(a, 2) + "', 'UTF8') WHERE event_id = 'evt-2'", a,
			func(_, out *tally) bool { return out.cross == 1 && out.missing == 1 }},
		{"an outbox row twice", "INSERT INTO public.ded_outbox (tenant_id, event_id, topic, payload, delivered_at) VALUES ('" +
			a.String() + "', 'evt-x', 'dedicated', convert_to('" + bodyOf(a, 1) + "', 'UTF8'), now())",
			"DELETE FROM public.ded_outbox WHERE event_id = 'evt-x'", a,
			func(_, out *tally) bool { return out.duplicate == 1 }},
		{"an outbox row not delivered", "UPDATE public.ded_outbox SET delivered_at = NULL WHERE event_id = 'evt-1'",
			"UPDATE public.ded_outbox SET delivered_at = now() WHERE event_id = 'evt-1'", b,
			func(_, out *tally) bool { return out.missing == 1 }},
	} {
		if err := onServer(pgs, p, c.owner, c.do); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		docs, out, err := run(p, ids)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !c.want(docs, out) || !(docs.failed() || out.failed()) {
			t.Errorf("%s: not caught: %s / %s", c.name, docs, out)
		}
		if err := onServer(pgs, p, c.owner, c.undo); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	// Every database on the other server than its placement names.
	swapped := newPlacement([]string{pgs[1].port, pgs[0].port}, ids)
	if docs, out, err := run(swapped, ids); err != nil || docs.cross != 3 || out.cross != 3 || !docs.failed() {
		t.Errorf("databases on the wrong servers: %v, %s / %s", err, docs, out)
	}
	// A database of a tenant the run does not have.
	if _, _, err := run(newPlacement(p.ports, ids[:2]), ids[:2]); err == nil || !strings.Contains(err.Error(), "no tenant") {
		t.Errorf("a database of no tenant: %v", err)
	}
	// A tenant whose database is on both servers.
	if err := pgs[1].exec("postgres", "CREATE DATABASE "+dedDatabase(ids[2])); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(p, ids); err == nil || !strings.Contains(err.Error(), "2 databases") {
		t.Errorf("a tenant database on both servers: %v", err)
	}
}

// onServer runs stmt in the tenant's database, on its placed server.
func onServer(pgs []*privatePG, p placement, id tenancy.ID, stmt string) error {
	s, _ := p.server(id)
	return pgs[s].exec(dedDatabase(id), stmt)
}
