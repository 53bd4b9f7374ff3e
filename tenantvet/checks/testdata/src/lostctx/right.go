package lostctx

import (
	"context"
	"net/http"
	"time"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/capability"
	"github.com/tenantwire/tenantwire/tenancy"
)

func (h *handler) incoming(ctx context.Context) {
	h.counter.Add(ctx, "hits", 1)
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	h.counter.Get(tctx, "hits")
	h.counter.Get(context.WithoutCancel(ctx), "hits") // keeps the tenant: values survive
	h.counter.Name()
}

func (h *handler) request(w http.ResponseWriter, r *http.Request) {
	h.counter.Get(r.Context(), "hits")
	ctx := r.Context()
	h.docs.Get(ctx, "doc-1")
}

func rightInterface(ctx context.Context, c capability.Counter) {
	get := c.Get
	get(ctx, "hits")
	f := func() { c.Add(ctx, "hits", 1) }
	f()
}

func rightGeneric[C capability.Counter](ctx context.Context, c C) { c.Get(ctx, "hits") }

// A function that binds the tenant itself is a boundary of its own.
func binds(id tenancy.ID, c *postgres.Counter) {
	ctx := tenancy.WithTenant(context.Background(), id)
	c.Get(ctx, "hits")
	c.Get(context.Background(), "hits")
}

// A context from an unknown source is not judged (precision first).
func unknown(c *postgres.Counter, get func() context.Context) {
	c.Get(get(), "hits")
}

// An escape with a reason silences the line below it.
func escaped(c *postgres.Counter) {
	//tenantvet:ignore lostctx the fleet-wide counter is read before any tenant exists, and fails closed if not
	c.Get(context.Background(), "hits")
}

// An escape may also end the line it silences.
func trailing(c *postgres.Counter) {
	c.Get(context.Background(), "hits") //tenantvet:ignore lostctx read before any tenant exists, fails closed if not
}

// A helper that binds its own tenant needs none from its caller.
func (h *handler) job(ctx context.Context, id tenancy.ID) {
	ctx = tenancy.WithTenant(ctx, id)
	h.counter.Add(ctx, "jobs", 1)
}

func (h *handler) startJob(id tenancy.ID) { h.job(context.Background(), id) }

// A helper that takes a context but reaches no route is not a sink.
func log(ctx context.Context, msg string) {}

func logs() { log(context.Background(), "started") }
