package postgres

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/internal/testsvc"
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
	app := fx.New(fx.NopLogger, Module("pg", DSN(url)),
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
	g := c.Ownership(OwnershipConfig{Table: Table(table), TenantAware: true})
	other := c.Ownership(OwnershipConfig{Table: Table(table + "_x"), TenantAware: true})
	if err := g.Check(ctxA, "m1"); err != nil {
		t.Fatal(err)
	}
	set(tenancytest.TenantB)
	c.forgetOwned(Table(table+"_x"), tenancytest.TenantA, "m1") // another table: no effect
	if err := g.Check(ctxA, "m1"); err != nil {
		t.Fatalf("a delete on another table dropped the positive: %v", err)
	}
	c.forgetOwned(Table(table), tenancytest.TenantA, "m1")
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
		_ = c.Ownership(OwnershipConfig{Table: Table("t"), TenantAware: true})
		if n := len(gatesOf(c).gates); n > 200 {
			runtime.GC()
		}
	}
	runtime.GC()
	_ = c.Ownership(OwnershipConfig{Table: Table("t"), TenantAware: true})
	if n := len(gatesOf(c).gates); n > 2 {
		t.Errorf("the client holds %d gates after the others were dropped", n)
	}
}
