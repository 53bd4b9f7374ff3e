package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var errBoom = errors.New("boom")

// uowRoutes starts every route kind at tier, the messaging routes
// included, and provisions A and B.
func uowRoutes(t *testing.T, tier tenancy.Tier) (routeSet, *messagingSet) {
	return uowRoutesVia(t, direct, tier)
}

// uowRoutesVia is uowRoutes through v.
func uowRoutesVia(t *testing.T, v via, tier tenancy.Tier) (routeSet, *messagingSet) {
	ms, opts, targets := messagingRoutes(tier)
	var resolve routing.Resolver
	if tier == tenancy.Dedicated {
		resolve = twoDatabases(t)
	}
	return tierRoutesOn(t, v, tier, resolve, opts, targets...), ms
}

// events is how many undelivered outbox rows of the tenant bound to ctx
// carry each event id; the claim is abandoned, so nothing is delivered.
func events(t *testing.T, o *postgres.Outbox, ctx context.Context) map[string]int {
	t.Helper()
	b, err := o.Claim(ctx, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abandon(ctx)
	out := map[string]int{}
	for _, m := range b.Messages() {
		out[m.EventID]++
	}
	return out
}

func requirePG(t *testing.T, err error, code tenancy.Code, route string, detail ...string) {
	t.Helper()
	_ = tenancytest.RequireCode(t, err, code, "postgres", "pg", route, detail...)
}

// writeAll writes through every route kind under ctx, tagged with id, and
// checks that reads under ctx see the writes.
func writeAll(t *testing.T, ctx context.Context, rs routeSet, ms *messagingSet, id string) {
	t.Helper()
	if _, err := rs.docs.Create(ctx, id, item{Name: id, N: 7}); err != nil {
		t.Fatal(err)
	}
	must0(t, ms.outbox.Write(ctx, outbox.Message{EventID: id, Topic: "orders", Payload: []byte(id)}))
	if _, err := rs.counter.Add(ctx, id, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.inbox.Mark(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ms.idem.Do(ctx, id, result("r-"+id)); err != nil {
		t.Fatal(err)
	}
	must0(t, rs.search.Put(ctx, id, "zebra "+id))
	if ms.hub != nil {
		must0(t, ms.hub.Put(ctx, id, "zebra "+id))
	}
	// Reads inside the unit see its writes.
	if r, err := rs.docs.Get(ctx, id); err != nil || r.Value.N != 7 {
		t.Fatalf("get inside the unit: %+v, %v", r, err)
	}
	if n, err := rs.docs.Count(ctx, document.Query{}); err != nil || n != 1 {
		t.Fatalf("count inside the unit: %d, %v", n, err)
	}
	if v, err := rs.counter.Get(ctx, id); err != nil || v != 3 {
		t.Fatalf("counter inside the unit: %d, %v", v, err)
	}
	if seen, err := ms.inbox.Seen(ctx, id); err != nil || !seen {
		t.Fatalf("inbox inside the unit: %v, %v", seen, err)
	}
	if r, ok, err := ms.idem.Get(ctx, id); err != nil || !ok || string(r) != "r-"+id {
		t.Fatalf("idempotency inside the unit: %q %v %v", r, ok, err)
	}
	if n, err := rs.search.Count(ctx, "zebra"); err != nil || n != 1 {
		t.Fatalf("search inside the unit: %d, %v", n, err)
	}
	if rows, err := rs.stats.Run(ctx, "total"); err != nil || len(rows) != 1 || rows[0].Value != 1 {
		t.Fatalf("analytics inside the unit: %v, %v", rows, err)
	}
	if ms.federate != nil {
		if hs, err := ms.federate.Search(ctx, "zebra", 10); err != nil || len(hs) != 1 {
			t.Fatalf("federated search inside the unit: %v, %v", hs, err)
		}
	}
}

// present reports, per route kind, whether id's writes are visible under
// ctx (outside any unit).
func present(t *testing.T, ctx context.Context, rs routeSet, ms *messagingSet, id string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	_, err := rs.docs.Get(ctx, id)
	if err != nil && !errors.Is(err, document.ErrNotFound) {
		t.Fatal(err)
	}
	out["document"] = err == nil
	out["outbox"] = events(t, ms.outbox, ctx)[id] > 0
	v, err := rs.counter.Get(ctx, id)
	must0(t, err)
	out["counter"] = v != 0
	seen, err := ms.inbox.Seen(ctx, id)
	must0(t, err)
	out["inbox"] = seen
	_, ok, err := ms.idem.Get(ctx, id)
	must0(t, err)
	out["idempotency"] = ok
	n, err := rs.search.Count(ctx, id)
	must0(t, err)
	out["search"] = n > 0
	if ms.hub != nil {
		n, err := ms.hub.Count(ctx, id)
		must0(t, err)
		out["hub"] = n > 0
	}
	return out
}

func requirePresent(t *testing.T, what string, got map[string]bool, want bool) {
	t.Helper()
	for k, v := range got {
		if v != want {
			t.Errorf("%s: %s written=%v, want %v", what, k, v, want)
		}
	}
}

// TestUnitOfWorkCommitsOrRollsBackTogether: at tagged, namespace and
// routed (dedicated), a unit whose function fails after the document and
// outbox writes leaves neither (nor the counter, inbox, idempotency and
// search writes); a panic rolls back and goes on; a unit that returns nil
// commits them all. Reads inside the unit see its writes, and tenant B
// sees nothing of A's.
func TestUnitOfWorkCommitsOrRollsBackTogether(t *testing.T) { unitAtomic(t, direct) }

// TestUnitOfWorkThroughPgBouncer: the same through a transaction pooler,
// which keeps a server connection for the unit's transaction.
func TestUnitOfWorkThroughPgBouncer(t *testing.T) { unitAtomic(t, throughPgBouncer) }

func unitAtomic(t *testing.T, v via) {
	for _, tier := range tiers {
		t.Run(tier.String(), func(t *testing.T) {
			rs, ms := uowRoutesVia(t, v, tier)
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)

			err := rs.client.InTx(ctxA, func(ctx context.Context) error {
				writeAll(t, ctx, rs, ms, "failed")
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Fatalf("InTx returned %v, want the function's error", err)
			}
			requirePresent(t, "after a failed unit", present(t, ctxA, rs, ms, "failed"), false)

			func() {
				defer func() {
					if p := recover(); p != errBoom {
						t.Errorf("recovered %v, want the function's panic", p)
					}
				}()
				_ = rs.client.InTx(ctxA, func(ctx context.Context) error {
					writeAll(t, ctx, rs, ms, "panicked")
					panic(errBoom)
				})
			}()
			requirePresent(t, "after a panicking unit", present(t, ctxA, rs, ms, "panicked"), false)
			// Rolled back, not left open: an open transaction would hold
			// the id's key, and this write would wait for it.
			wctx, cancel := context.WithTimeout(ctxA, 5*time.Second)
			if _, err := rs.docs.Create(wctx, "panicked", item{}); err != nil {
				t.Fatalf("writing the panicked unit's id afterwards: %v", err)
			}
			cancel()
			must0(t, rs.docs.Delete(ctxA, "panicked"))

			must0(t, rs.client.InTx(ctxA, func(ctx context.Context) error {
				writeAll(t, ctx, rs, ms, "placed")
				return nil
			}))
			requirePresent(t, "after a committed unit", present(t, ctxA, rs, ms, "placed"), true)
			requirePresent(t, "B after A's unit", present(t, ctxB, rs, ms, "placed"), false)
			if n, err := rs.docs.Count(ctxA, document.Query{}); err != nil || n != 1 {
				t.Errorf("A's documents: %d, %v; want the committed one", n, err)
			}
		})
	}
}

// TestUnitOfWorkTenantIsFixed: inside A's unit, a call under a context
// re-bound to B is refused with tenant_scope_changed on every route kind
// (reads included), a nested InTx under B too, and a context re-bound to
// the global scope with tenant_unbound; none of it reaches B's data or
// A's unit, which still commits A's own write.
func TestUnitOfWorkTenantIsFixed(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.String(), func(t *testing.T) {
			rs, ms := uowRoutes(t, tier)
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
			must0(t, rs.client.InTx(ctxA, func(ctx context.Context) error {
				if _, err := rs.docs.Create(ctx, "mine", item{Name: "a"}); err != nil {
					return err
				}
				asB := tenancy.WithTenant(ctx, tenancytest.TenantB)
				scope := func(route string, err error) {
					t.Helper()
					requirePG(t, err, tenancy.CodeTenantScopeChanged, route, tenancytest.TenantA.String(), tenancytest.TenantB.String())
				}
				_, err := rs.docs.Create(asB, "stolen", item{Name: "b"})
				scope("docs", err)
				_, err = rs.docs.Get(asB, "mine")
				scope("docs", err)
				_, err = rs.docs.List(asB, document.Query{})
				scope("docs", err)
				scope("docs", rs.docs.Delete(asB, "mine"))
				scope("out", ms.outbox.Write(asB, outbox.Message{EventID: "stolen", Topic: "t"}))
				_, err = rs.counter.Add(asB, "stolen", 1)
				scope("counter", err)
				_, err = ms.inbox.Mark(asB, "stolen")
				scope("in", err)
				ran := false
				_, _, err = ms.idem.Do(asB, "stolen", func(context.Context) ([]byte, error) { ran = true; return nil, nil })
				scope("idem", err)
				scope("search", rs.search.Put(asB, "stolen", "zebra"))
				_, err = rs.stats.Run(asB, "total")
				scope("stats", err)
				scope("", rs.client.InTx(asB, func(context.Context) error { ran = true; return nil }))
				if ran {
					t.Error("a function ran under B inside A's unit")
				}
				global := tenancy.WithGlobal(ctx)
				_, err = rs.docs.Create(global, "global", item{})
				requirePG(t, err, tenancy.CodeTenantUnbound, "docs")
				requirePG(t, rs.client.InTx(global, func(context.Context) error { return nil }), tenancy.CodeTenantUnbound, "")
				return nil
			}))
			if r, err := rs.docs.Get(ctxA, "mine"); err != nil || r.Value.Name != "a" {
				t.Errorf("A's own write: %+v, %v", r, err)
			}
			requirePresent(t, "B", present(t, ctxB, rs, ms, "stolen"), false)
			if n, err := rs.docs.Count(ctxB, document.Query{}); err != nil || n != 0 {
				t.Errorf("B's documents: %d, %v", n, err)
			}
		})
	}
}

// TestUnitOfWorkUnbound: with no tenant bound, or the global scope, InTx
// fails with tenant_unbound before its function runs: never the default
// tenant.
func TestUnitOfWorkUnbound(t *testing.T) {
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("docs_" + unique())})), &d)
	for _, ctx := range []context.Context{context.Background(), tenancy.WithGlobal(context.Background())} {
		ran := false
		err := c.InTx(ctx, func(context.Context) error { ran = true; return nil })
		requirePG(t, err, tenancy.CodeTenantUnbound, "")
		if ran {
			t.Error("the function ran with no tenant bound")
		}
	}
}

// TestUnitOfWorkContextOutlivesIt: a unit's context kept past the unit (a
// goroutine, a stored context) is refused with postgres_unit_of_work_ended
// on every call, after a commit or a rollback; nothing runs on the
// finished transaction nor outside it.
func TestUnitOfWorkContextOutlivesIt(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.String(), func(t *testing.T) {
			rs, ms := uowRoutes(t, tier)
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			for _, fail := range []bool{false, true} {
				var kept context.Context
				_ = rs.client.InTx(ctxA, func(ctx context.Context) error {
					kept = ctx
					if _, err := rs.docs.Create(ctx, fmt.Sprint("in-", fail), item{}); err != nil {
						return err
					}
					if fail {
						return errBoom
					}
					return nil
				})
				ended := func(route string, err error) {
					t.Helper()
					requirePG(t, err, postgres.CodeUnitOfWorkEnded, route)
				}
				_, err := rs.docs.Create(kept, "late", item{})
				ended("docs", err)
				_, err = rs.docs.Get(kept, "late")
				ended("docs", err)
				ended("out", ms.outbox.Write(kept, outbox.Message{EventID: "late", Topic: "t"}))
				_, err = rs.counter.Add(kept, "late", 1)
				ended("counter", err)
				_, err = ms.inbox.Mark(kept, "late")
				ended("in", err)
				_, _, err = ms.idem.Do(kept, "late", result("x"))
				ended("idem", err)
				ended("search", rs.search.Put(kept, "late", "zebra"))
				_, err = ms.outbox.Claim(kept, 10)
				ended("out", err)
				ended("", rs.client.InTx(kept, func(context.Context) error { return nil }))
				if rs.dyn != nil {
					ended("dyn", rs.dyn.Query(kept, "SELECT 1", nil, func(pgx.Rows) error { return nil }))
				}
			}
			requirePresent(t, "late writes", present(t, ctxA, rs, ms, "late"), false)
		})
	}
}

// TestUnitOfWorkEndRacesGoroutines: goroutines started inside a unit keep
// writing while the unit commits. Each write either returned nil and is
// committed, or was refused with postgres_unit_of_work_ended; none is lost
// and none runs after the commit.
func TestUnitOfWorkEndRacesGoroutines(t *testing.T) {
	rs, _ := uowRoutes(t, tenancy.Tagged)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	const workers = 6
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		written []string
		last    = make([]error, workers)
		started = make(chan struct{}, workers)
	)
	must0(t, rs.client.InTx(ctxA, func(ctx context.Context) error {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				signaled := false
				defer func() {
					if !signaled {
						started <- struct{}{}
					}
				}()
				for k := 0; ; k++ {
					id := fmt.Sprintf("g%d-%d", w, k)
					_, err := rs.docs.Create(ctx, id, item{N: k})
					if err != nil {
						last[w] = err
						return
					}
					mu.Lock()
					written = append(written, id)
					mu.Unlock()
					if k == 2 {
						signaled = true
						started <- struct{}{}
					}
				}
			}()
		}
		for range workers {
			<-started
		}
		return nil // without waiting for the goroutines
	}))
	wg.Wait()
	for w, err := range last {
		if tenancy.CodeOf(err) != postgres.CodeUnitOfWorkEnded {
			t.Errorf("goroutine %d stopped with %v, want %s", w, err, postgres.CodeUnitOfWorkEnded)
		}
	}
	n, err := rs.docs.Count(ctxA, document.Query{})
	must0(t, err)
	if n != len(written) {
		t.Errorf("%d documents committed, %d writes returned nil", n, len(written))
	}
	for _, id := range written {
		if _, err := rs.docs.Get(ctxA, id); err != nil {
			t.Errorf("write %s returned nil and is not committed: %v", id, err)
		}
	}
}

// TestUnitOfWorkConcurrent: units of both tenants run concurrently, half
// failing; each tenant ends with exactly its committed units' documents,
// events and counts. Goroutines inside one unit share its transaction.
func TestUnitOfWorkConcurrent(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.String(), func(t *testing.T) {
			rs, ms := uowRoutes(t, tier)
			const goroutines, units = 6, 4
			var wg sync.WaitGroup
			errs := make(chan error, 2*goroutines*units)
			for _, tn := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
				ctx := tenancy.WithTenant(context.Background(), tn)
				for g := range goroutines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for u := range units {
							id := fmt.Sprintf("%s-%d-%d", tn.Hex()[:4], g, u)
							fail := (g+u)%2 == 1
							err := rs.client.InTx(ctx, func(ctx context.Context) error {
								if _, err := rs.docs.Create(ctx, id, item{N: 1}); err != nil {
									return err
								}
								if err := ms.outbox.Write(ctx, outbox.Message{EventID: id, Topic: "t"}); err != nil {
									return err
								}
								if _, err := rs.counter.Add(ctx, "units", 1); err != nil {
									return err
								}
								if fail {
									return errBoom
								}
								return nil
							})
							if fail != errors.Is(err, errBoom) || (!fail && err != nil) {
								errs <- fmt.Errorf("unit %s (fail=%v): %v", id, fail, err)
							}
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			want := goroutines * units / 2
			for _, tn := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
				ctx := tenancy.WithTenant(context.Background(), tn)
				recs, err := rs.docs.List(ctx, document.Query{})
				must0(t, err)
				ev := events(t, ms.outbox, ctx)
				v, err := rs.counter.Get(ctx, "units")
				must0(t, err)
				if len(recs) != want || len(ev) != want || v != int64(want) {
					t.Errorf("tenant %s: %d documents, %d events, counter %d; want %d each", tn, len(recs), len(ev), v, want)
				}
				for _, r := range recs {
					if r.ID[:4] != tn.Hex()[:4] || ev[r.ID] != 1 {
						t.Errorf("tenant %s holds %s (events %d)", tn, r.ID, ev[r.ID])
					}
				}
			}

			// One unit, several goroutines: one transaction, all or nothing.
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			for _, fail := range []bool{true, false} {
				err := rs.client.InTx(ctxA, func(ctx context.Context) error {
					var wg sync.WaitGroup
					errs := make([]error, goroutines)
					for g := range goroutines {
						wg.Add(1)
						go func() {
							defer wg.Done()
							if _, err := rs.docs.Create(ctx, fmt.Sprintf("shared-%v-%d", fail, g), item{}); err != nil {
								errs[g] = err
								return
							}
							_, errs[g] = rs.docs.List(ctx, document.Query{})
						}()
					}
					wg.Wait()
					if err := errors.Join(errs...); err != nil {
						return err
					}
					if fail {
						return errBoom
					}
					return nil
				})
				if fail != errors.Is(err, errBoom) || (!fail && err != nil) {
					t.Fatalf("shared unit (fail=%v): %v", fail, err)
				}
				n, err := rs.docs.Count(ctxA, document.Query{Filters: []document.Filter{{Field: "n", Op: document.Eq, Value: 0}}})
				must0(t, err)
				if want := map[bool]int{true: 0, false: goroutines}[fail]; n != want {
					t.Errorf("after the shared unit (fail=%v): %d documents, want %d", fail, n, want)
				}
			}
		})
	}
}

// TestUnitOfWorkNested: a nested InTx joins the unit (its writes commit or
// roll back with the unit's). A transaction inside the unit that fails
// (a nested InTx, an Outbox.Write, an Idempotency.Do) while the unit's
// function returns nil rolls the whole unit back with
// postgres_unit_of_work_rolled_back: the unit never commits part of its
// work.
func TestUnitOfWorkNested(t *testing.T) {
	rs, ms := uowRoutes(t, tenancy.Tagged)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	has := func(id string) bool {
		_, err := rs.docs.Get(ctxA, id)
		return err == nil
	}

	must0(t, rs.client.InTx(ctxA, func(ctx context.Context) error {
		if err := rs.client.InTx(ctx, func(ctx context.Context) error {
			_, err := rs.docs.Create(ctx, "inner", item{})
			return err
		}); err != nil {
			return err
		}
		if _, err := rs.docs.Get(ctx, "inner"); err != nil {
			return fmt.Errorf("the outer unit does not see the nested write: %w", err)
		}
		_, err := rs.docs.Create(ctx, "outer", item{})
		return err
	}))
	if !has("inner") || !has("outer") {
		t.Fatalf("nested unit: inner=%v outer=%v, want both committed", has("inner"), has("outer"))
	}

	err := rs.client.InTx(ctxA, func(ctx context.Context) error {
		must0(t, rs.client.InTx(ctx, func(ctx context.Context) error {
			_, err := rs.docs.Create(ctx, "inner-2", item{})
			return err
		}))
		return errBoom
	})
	if !errors.Is(err, errBoom) || has("inner-2") {
		t.Fatalf("outer failure after a nested success: %v, inner kept=%v", err, has("inner-2"))
	}

	swallowed := map[string]func(ctx context.Context) error{
		"nested InTx": func(ctx context.Context) error {
			return rs.client.InTx(ctx, func(ctx context.Context) error {
				if _, err := rs.docs.Create(ctx, "half", item{}); err != nil {
					return err
				}
				return errBoom
			})
		},
		"outbox write": func(ctx context.Context) error {
			return ms.outbox.Write(ctx, outbox.Message{EventID: "half", Topic: "t"},
				outbox.Message{EventID: "foreign", Topic: "t", Tenant: tenancytest.TenantB})
		},
		"idempotency": func(ctx context.Context) error {
			_, _, err := ms.idem.Do(ctx, "half", func(ctx context.Context) ([]byte, error) {
				if _, err := rs.docs.Create(ctx, "half", item{}); err != nil {
					return nil, err
				}
				return nil, errBoom
			})
			return err
		},
		"inbox": func(ctx context.Context) error {
			_, err := ms.inbox.Once(ctx, "half", func(ctx context.Context, tx pgx.Tx) error {
				if _, err := rs.docs.Create(ctx, "half", item{}); err != nil {
					return err
				}
				return errBoom
			})
			return err
		},
	}
	for name, inner := range swallowed {
		t.Run(name, func(t *testing.T) {
			var innerErr error
			err := rs.client.InTx(ctxA, func(ctx context.Context) error {
				if _, err := rs.docs.Create(ctx, "before", item{}); err != nil {
					return err
				}
				innerErr = inner(ctx)
				return nil // the inner failure is swallowed
			})
			if innerErr == nil {
				t.Fatal("the inner transaction did not fail")
			}
			requirePG(t, err, postgres.CodeUnitOfWorkRolledBack, "")
			if name == "nested InTx" && !errors.Is(err, errBoom) {
				t.Errorf("the error %v does not carry the nested unit's cause", err)
			}
			if has("before") || has("half") || events(t, ms.outbox, ctxA)["half"] > 0 {
				t.Errorf("a rolled-back unit left writes: before=%v half=%v", has("before"), has("half"))
			}
			if seen, err := ms.inbox.Seen(ctxA, "half"); err != nil || seen {
				t.Errorf("a rolled-back unit left the inbox mark: %v %v", seen, err)
			}
		})
	}
}

// TestUnitOfWorkRefusesWhatCannotJoin: inside a unit, a route and an InTx
// of another module are refused with postgres_unit_of_work_refused (their
// connection cannot join this one's transaction, and running them beside
// it would commit them apart), as are an outbox Claim and a dynamic read,
// whose compiled text could otherwise write inside a read-write
// transaction. A context from outside the unit runs the other module
// apart, on purpose.
func TestUnitOfWorkRefusesWhatCannotJoin(t *testing.T) {
	for _, tier := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated} {
		t.Run(tier.String(), func(t *testing.T) {
			run := unique()
			var other *postgres.Documents[item]
			var oc *postgres.Client
			otherMod := postgres.Module("other", postgres.Connect(testsvc.PostgresURL(t)), postgres.NamedOnly(),
				postgres.Document[item]("odocs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("odocs_" + run)}))
			rs, ms := func() (routeSet, *messagingSet) {
				ms, opts, targets := messagingRoutes(tier)
				var resolve routing.Resolver
				if tier == tenancy.Dedicated {
					resolve = twoDatabases(t)
				}
				targets = append(targets, otherMod, named("odocs", &other), named("other", &oc))
				return tierRoutesOn(t, direct, tier, resolve, opts, targets...), ms
			}()
			provision(t, oc, tenancytest.TenantA)
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			err := rs.client.InTx(ctxA, func(ctx context.Context) error {
				if _, err := rs.docs.Create(ctx, "mine", item{}); err != nil {
					return err
				}
				_, err := other.Create(ctx, "joined", item{})
				_ = tenancytest.RequireCode(t, err, postgres.CodeUnitOfWorkRefused, "postgres", "other", "odocs", "module pg")
				ran := false
				err = oc.InTx(ctx, func(context.Context) error { ran = true; return nil })
				_ = tenancytest.RequireCode(t, err, postgres.CodeUnitOfWorkRefused, "postgres", "other", "", "module pg")
				if ran {
					t.Error("another module's unit ran inside this one")
				}
				// Apart, on purpose: a context from outside the unit.
				if _, err := other.Create(ctxA, "apart", item{}); err != nil {
					return err
				}
				_, err = ms.outbox.Claim(ctx, 10)
				requirePG(t, err, postgres.CodeUnitOfWorkRefused, "out")
				scanned := false
				err = rs.dyn.Query(ctx, "SELECT pg_catalog.lo_from_bytea(0, 'x')", nil, func(pgx.Rows) error { scanned = true; return nil })
				requirePG(t, err, postgres.CodeUnitOfWorkRefused, "dyn", "dynamic read")
				if scanned {
					t.Error("a dynamic read ran inside the unit")
				}
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Fatal(err)
			}
			if _, err := rs.docs.Get(ctxA, "mine"); !errors.Is(err, document.ErrNotFound) {
				t.Errorf("the rolled-back unit's write: %v", err)
			}
			if _, err := other.Get(ctxA, "joined"); !errors.Is(err, document.ErrNotFound) {
				t.Errorf("the refused write of the other module: %v", err)
			}
			if _, err := other.Get(ctxA, "apart"); err != nil {
				t.Errorf("the other module's write made apart: %v", err)
			}
			// Outside the unit both run.
			if err := rs.dyn.Query(ctxA, "SELECT 1", nil, func(pgx.Rows) error { return nil }); err != nil {
				t.Errorf("dynamic read outside a unit: %v", err)
			}
		})
	}
}

// TestUnitOfWorkVersionGate: inside a unit the version gate still refuses
// a tenant whose schema is behind the module's required version, and a
// tenant never provisioned, with their own codes: the gate's reads of a
// missing history table or schema do not abort the unit's transaction
// (which would turn its answer into the driver's 25P02).
func TestUnitOfWorkVersionGate(t *testing.T) {
	f := newMigFixture(t)
	stale := migTenants(1)[0]
	var d *postgres.Documents[item]
	c := start(t, f.module(modules.Migrations(f.threeSteps()), modules.RequiredVersion(3)), &d)
	old := start(t, postgres.Module("pg", postgres.Use(f.pool), postgres.SchemaPrefix(f.prefix),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})))
	provision(t, old, stale)
	ctx := tenancy.WithTenant(context.Background(), stale)
	err := c.InTx(ctx, func(ctx context.Context) error {
		_, err := d.Create(ctx, "x", item{})
		return err
	})
	requirePG(t, err, tenancy.CodeTenantMigrationBehind, "docs", "at migration version 0; the routes need 3")
	never := migTenants(2)[1]
	err = c.InTx(tenancy.WithTenant(context.Background(), never), func(ctx context.Context) error {
		_, err := d.Get(ctx, "x")
		return err
	})
	requirePG(t, err, tenancy.CodeTenantNotProvisioned, "docs", "never provisioned")
	if _, err := c.Migrate(context.Background(), stale); err != nil {
		t.Fatal(err)
	}
	must0(t, c.InTx(ctx, func(ctx context.Context) error {
		_, err := d.Create(ctx, "x", item{})
		return err
	}))
	if _, err := d.Get(ctx, "x"); err != nil {
		t.Fatal(err)
	}
}

// TestUnitOfWorkOwnershipForgetsAfterCommit: a delete inside a unit tells
// the client's ownership gates once the unit commits. Told at the delete,
// a lookup before the commit (which still finds the row) would cache the
// id as owned again, and the gate would say so after the commit: on a
// routed client, which has no invalidation channel, for good; on a plain
// one until the delete's notice came back on the channel.
func TestUnitOfWorkOwnershipForgetsAfterCommit(t *testing.T) {
	t.Run("routed", func(t *testing.T) {
		var d *postgres.Documents[item]
		table := "gdocs_" + unique()
		c := start(t, postgres.Module("pg", postgres.Routed(twoDatabases(t), postgres.RoutedConfig{Limits: routing.Limits{MaxConnsPerClient: 2}}),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared(table)})), &d)
		gate := c.Ownership(postgres.OwnershipConfig{Table: naming.Shared(table)})
		forgetsAfterCommit(t, c, d, gate, func(ctx context.Context, id string) { must0(t, gate.Check(ctx, id)) })
	})
	t.Run("plain", func(t *testing.T) {
		r := newReplica(t, testsvc.PostgresURL(t), "tw"+unique()+"_", "gdocs_"+unique())
		forgetsAfterCommit(t, r.c, r.docs, r.gate, func(ctx context.Context, id string) { r.cached(t, ctx, id) })
	})
}

// forgetsAfterCommit is TestUnitOfWorkOwnershipForgetsAfterCommit on c;
// cache has the gate cache an owned id.
func forgetsAfterCommit(t *testing.T, c *postgres.Client, d *postgres.Documents[item], gate *ownership.Gate, cache func(context.Context, string)) {
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	for _, id := range []string{"g1", "g2"} {
		if _, err := d.Create(ctxA, id, item{}); err != nil {
			t.Fatal(err)
		}
	}
	cache(ctxA, "g1")
	must0(t, c.InTx(ctxA, func(ctx context.Context) error {
		if err := d.Delete(ctx, "g1"); err != nil {
			return err
		}
		// Another request, outside the unit, before it commits.
		return gate.Check(ctxA, "g1")
	}))
	if err := gate.Check(ctxA, "g1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("right after the delete committed the gate says %v, want not owned", err)
	}
	// Rolled back, the id stays owned.
	_ = c.InTx(ctxA, func(ctx context.Context) error {
		must0(t, d.Delete(ctx, "g2"))
		return errBoom
	})
	must0(t, gate.Check(ctxA, "g2"))
}

// TestUnitOfWorkSuspendedTenant: a suspended tenant's unit does not begin,
// and a tenant suspended while its unit runs is refused from its next
// call on, the unit rolling back; resumed, it is served again.
func TestUnitOfWorkSuspendedTenant(t *testing.T) {
	var (
		d       *postgres.Documents[item]
		tenants *modules.Tenants
	)
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("sdocs_" + unique())})),
		modules.Lifecycle(), &d, &tenants)
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	tenants.Suspend(tenancytest.TenantA)
	ran := false
	requirePG(t, c.InTx(ctxA, func(context.Context) error { ran = true; return nil }), tenancy.CodeTenantSuspended, "")
	if ran {
		t.Error("a suspended tenant's unit ran")
	}
	tenants.Resume(tenancytest.TenantA)
	err := c.InTx(ctxA, func(ctx context.Context) error {
		if _, err := d.Create(ctx, "before", item{}); err != nil {
			return err
		}
		tenants.Suspend(tenancytest.TenantA)
		_, err := d.Create(ctx, "after", item{})
		return err
	})
	requirePG(t, err, tenancy.CodeTenantSuspended, "docs")
	tenants.Resume(tenancytest.TenantA)
	if n, err := d.Count(ctxA, document.Query{}); err != nil || n != 0 {
		t.Errorf("after the refused unit A has %d documents (%v)", n, err)
	}
}
