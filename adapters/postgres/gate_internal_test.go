package postgres

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestClientForgetsOwned: the client's delete hooks reach every gate it
// built over the table (and only those), with the real lookup behind them.
func TestClientForgetsOwned(t *testing.T) {
	url := testsvc.PostgresURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	table := "gf_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := conn.Exec(ctx, "CREATE TABLE public."+table+" (tenant_id uuid NOT NULL, id text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, "DROP TABLE public."+table) }()
	var c *Client
	app := fx.New(fx.NopLogger, Module("pg", Connect(url)),
		fx.Invoke(fx.Annotate(func(cl *Client) { c = cl }, fx.ParamTags(`name:"pg"`))))
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(ctx) }()
	set := func(owner tenancy.ID) {
		if _, err := conn.Exec(ctx, "DELETE FROM public."+table); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO public."+table+" VALUES ($1, 'm1')", owner.String()); err != nil {
			t.Fatal(err)
		}
	}
	ctxA := tenancy.WithTenant(ctx, tenancytest.TenantA)
	set(tenancytest.TenantA)
	g := c.Ownership(OwnershipConfig{Table: naming.Shared(table), TenantAware: true})
	other := c.Ownership(OwnershipConfig{Table: naming.Shared(table + "_x"), TenantAware: true})
	waitInStep(t, c)
	if err := g.Check(ctxA, "m1"); err != nil {
		t.Fatal(err)
	}
	set(tenancytest.TenantB)
	c.forgetOwned(naming.Shared(table+"_x"), tenancytest.TenantA, "m1") // another table: no effect
	if err := g.Check(ctxA, "m1"); err != nil {
		t.Fatalf("a delete on another table dropped the positive: %v", err)
	}
	c.forgetOwned(naming.Shared(table), tenancytest.TenantA, "m1")
	if err := g.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("the old owner allowed after the delete hook: %v", err)
	}
	set(tenancytest.TenantA)
	if err := g.Check(ctxA, "m1"); err != nil {
		t.Fatal(err)
	}
	set(tenancytest.TenantB)
	c.forgetTenant(tenancytest.TenantA)
	if err := g.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("the old owner allowed after the teardown hook: %v", err)
	}
	runtime.KeepAlive(other)
}

// TestClientGateSetBounded: gates the caller dropped are pruned, so
// building gates repeatedly does not grow the client's set.
func TestClientGateSetBounded(t *testing.T) {
	c := &Client{}
	for range 1000 {
		_ = c.Ownership(OwnershipConfig{Table: naming.Shared("t"), TenantAware: true})
		if n := len(gatesOf(c).gates); n > 200 {
			runtime.GC()
		}
	}
	runtime.GC()
	_ = c.Ownership(OwnershipConfig{Table: naming.Shared("t"), TenantAware: true})
	if n := len(gatesOf(c).gates); n > 2 {
		t.Errorf("the client holds %d gates after the others were dropped", n)
	}
}

// waitInStep waits until the client's invalidation listener is in step,
// so that its gates cache.
func waitInStep(t testing.TB, c *Client) {
	t.Helper()
	s := gateSetOf(c)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		synced := s.synced
		s.mu.Unlock()
		if synced {
			return
		}
	}
	t.Fatal("the ownership gates' invalidation listener never got in step")
}

// TestGateNoticeRoundTrip: a notice reads back as written, whatever the id
// holds; one too long for the channel names the tenant; anything malformed
// is refused (and then clears every gate).
func TestGateNoticeRoundTrip(t *testing.T) {
	for _, id := range []string{"m1", "", "a|b:3:c", "7:x", string(make([]byte, 100))} {
		p := gateIDNotice(`"public"."t:1"`, "id", tenancytest.TenantA, id)
		n, ok := parseGateNotice(p)
		if !ok || n.kind != gateNoticeID || n.tenant != tenancytest.TenantA || n.table != `"public"."t:1"` || n.col != "id" || n.id != id {
			t.Errorf("%q: read back %+v %v", id, n, ok)
		}
	}
	long := gateIDNotice(`"public"."t"`, "", tenancytest.TenantB, string(make([]byte, maxGatePayload)))
	if n, ok := parseGateNotice(long); len(long) > maxGatePayload || !ok || n.kind != gateNoticeTenant || n.tenant != tenancytest.TenantB {
		t.Errorf("an oversized notice: %d bytes, %+v %v", len(long), n, ok)
	}
	good := gateIDNotice("t", "", tenancytest.TenantA, "x")
	for _, bad := range []string{"", "x", "o", good[:20], good[:37], "o" + tenancytest.TenantA.String() + "99:t0:x", "t" + tenancytest.TenantA.String() + "junk", "o" + strings.Repeat("0", 36) + "1:t0:"} {
		if n, ok := parseGateNotice(bad); ok {
			t.Errorf("%q was read as %+v", bad, n)
		}
	}
}
