package lostctx

import (
	"context"
	"net/http"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/capability"
)

type handler struct {
	ctx     context.Context
	counter *postgres.Counter
	docs    *postgres.Documents[string]
}

var appCtx = context.Background()

func (h *handler) background(ctx context.Context) {
	h.counter.Add(context.Background(), "hits", 1) // want `lostctx: postgres.Counter.Add is called with context.Background\(\), which carries no tenant: it fails closed with tenant_unbound; pass the function's incoming ctx \(or a context derived from it\)`
}

func (h *handler) todo(w http.ResponseWriter, r *http.Request) {
	h.counter.Get(context.TODO(), "hits") // want `lostctx: postgres.Counter.Get is called with context.TODO\(\)`
}

func (h *handler) field(ctx context.Context) {
	h.counter.Get(h.ctx, "hits") // want `lostctx: postgres.Counter.Get is called with the context stored in field ctx`
}

func (h *handler) packageVar(ctx context.Context) {
	h.counter.Get(appCtx, "hits") // want `lostctx: postgres.Counter.Get is called with the package-level context appCtx`
}

func (h *handler) derived(ctx context.Context) {
	bg, cancel := context.WithTimeout(context.WithoutCancel(context.Background()), 0)
	defer cancel()
	h.counter.Get(bg, "hits") // want `lostctx: postgres.Counter.Get is called with bg \(context.Background\(\)\)`
}

// An interface call counts: capability.Counter is what routes satisfy.
func viaInterface(ctx context.Context, c capability.Counter) {
	c.Add(context.Background(), "hits", 1) // want `lostctx: capability.Counter.Add is called with context.Background\(\)`
}

// A method value counts.
func methodValue(ctx context.Context, c *postgres.Counter) {
	add := c.Add
	add(context.Background(), "hits", 1) // want `lostctx: postgres.Counter.Add is called with context.Background\(\)`
}

// A method expression counts: the context is its second argument.
func methodExpr(ctx context.Context, c *postgres.Counter) {
	(*postgres.Counter).Get(c, context.TODO(), "hits") // want `lostctx: postgres.Counter.Get is called with context.TODO\(\)`
}

// A generic route and a type parameter constrained by a route interface.
func generic[C capability.Counter](ctx context.Context, c C, d *postgres.Documents[string]) {
	c.Get(context.Background(), "hits")  // want `lostctx: capability.Counter.Get is called with context.Background\(\)`
	d.Get(context.Background(), "doc-1") // want `lostctx: postgres.Documents.Get is called with context.Background\(\)`
}

// A closure that is not a goroutine is judged as its function.
func closure(ctx context.Context, c *postgres.Counter) {
	f := func() { c.Get(context.Background(), "hits") } // want `lostctx: postgres.Counter.Get is called with context.Background\(\)`
	f()
}

// No incoming context at all: still no tenant.
func noIncoming(c *postgres.Counter) {
	c.Get(context.Background(), "hits") // want `lostctx: postgres.Counter.Get is called with context.Background\(\)`
}

// An escape without a reason silences nothing and is reported.
func reasonless(ctx context.Context, c *postgres.Counter) {
	//tenantvet:ignore lostctx // want `lostctx: //tenantvet:ignore lostctx needs a reason after the check name`
	c.Get(context.Background(), "hits") // want `lostctx: postgres.Counter.Get is called with context.Background\(\)`
}

// An escape naming no check is reported.
func unknownCheck(ctx context.Context, c *postgres.Counter) {
	//tenantvet:ignore lostcontext typo // want `tenantvet: //tenantvet:ignore names no check "lostcontext"`
	c.Get(ctx, "hits")
}

// A helper of this package that passes its context on to a route (here
// through another helper) loses the tenant the same way.
func (h *handler) record(ctx context.Context, name string) {
	h.count(ctx, name)
}

func (h *handler) count(ctx context.Context, name string) {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h.counter.Add(tctx, name, 1)
}

func (h *handler) viaHelper(ctx context.Context) {
	h.record(context.Background(), "hits") // want `lostctx: record \(which passes it to postgres.Counter.Add\) is called with context.Background\(\)`
}
