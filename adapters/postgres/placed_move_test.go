package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// moveRecords is how many records A holds when it is moved: 2,000 by
// default, TENANTWIRE_MOVE_RECORDS (make soak: 100,000) for the long run.
func moveRecords(t *testing.T) int { return tenancytest.MoveRecords(t, 2000) }

// TestMoveUnderLoad moves tenant A tagged → namespace → dedicated →
// tagged while goroutines write and read A and write B: no acknowledged
// write is lost, no read of A sees fewer records than A held before the
// moves began (a partial tenant) or any of B's, writes refused under the
// fence are tenant_moving, and the old copies are erased by CleanupMove.
// The longest write fence and each move's time are printed.
func TestMoveUnderLoad(t *testing.T) {
	p := newPlacedApp(t)
	a, b := tenancytest.TenantA, tenancytest.TenantB
	ctxA, ctxB := tenancy.WithTenant(context.Background(), a), tenancy.WithTenant(context.Background(), b)
	n := moveRecords(t)
	seed := superuser(t)
	exec(t, seed, `INSERT INTO public.`+p.table+` (tenant_id, id, version, value)
		SELECT $1, 'seed-' || g, 1, jsonb_build_object('name', 'seed', 'n', g) FROM generate_series(1, $2) g`, a.Bytes(), n)
	if _, err := p.docs.Create(ctxB, "b-only", item{Name: "b"}); err != nil {
		t.Fatal(err)
	}

	var (
		stop             atomic.Bool
		wg               sync.WaitGroup
		mu               sync.Mutex
		acked            []string
		fenced, badReads atomic.Int64
		failures         = make(chan error, 64)
	)
	fail := func(err error) {
		select {
		case failures <- err:
		default:
		}
	}
	const writers, readers = 8, 8
	for g := range writers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				ctx, id := ctxA, fmt.Sprintf("w-%d-%d", g, i)
				if g%4 == 3 {
					ctx = ctxB
				}
				for {
					_, err := p.docs.Create(ctx, id, item{Name: "w", N: i})
					if tenancy.CodeOf(err) == tenancy.CodeTenantMoving {
						fenced.Add(1)
						time.Sleep(2 * time.Millisecond)
						continue
					}
					if err != nil {
						fail(fmt.Errorf("write %s: %w", id, err))
						return
					}
					break
				}
				if ctx == ctxA {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			}
		})
	}
	for g := range readers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				if g%2 == 0 {
					if _, err := p.docs.Get(ctxA, "b-only"); !errors.Is(err, document.ErrNotFound) {
						badReads.Add(1)
						fail(fmt.Errorf("A read B's record: %v", err))
					}
					if _, err := p.docs.Get(ctxA, "seed-"+strconv.Itoa(1+i%n)); err != nil {
						badReads.Add(1)
						fail(fmt.Errorf("A's seed record: %w", err))
					}
					continue
				}
				c, err := p.docs.Count(ctxA, document.Query{})
				if err != nil || c < n {
					badReads.Add(1)
					fail(fmt.Errorf("A counts %d records (%v), held %d before the moves", c, err, n))
				}
			}
		})
	}
	var longest time.Duration
	for _, to := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated, tenancy.Tagged} {
		time.Sleep(100 * time.Millisecond) // load before each move
		began := time.Now()
		rep, err := p.tenants.Move(context.Background(), a, "orders", to, modules.MoveOptions{})
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("moving A to %s: %v", to, err)
		}
		longest = max(longest, rep.Fenced)
		t.Logf("move %s → %s: %d records, writes fenced %v, whole move %v", rep.From, rep.To, rep.Records, rep.Fenced.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		for _, s := range rep.Steps {
			t.Logf("  %s: %v %s", s.Step, s.Ended.Sub(s.Started).Round(time.Millisecond), s.Detail)
		}
	}
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	t.Logf("moved %d records three times under load: longest write fence %v; %d writes refused under the fence and retried; %d acknowledged writes of A", n, longest.Round(time.Millisecond), fenced.Load(), len(acked))

	for _, id := range acked {
		if _, err := p.docs.Get(ctxA, id); err != nil {
			t.Fatalf("acknowledged write %s of A: %v", id, err)
		}
	}
	if c, err := p.docs.Count(ctxA, document.Query{}); err != nil || c != n+len(acked) {
		t.Fatalf("A holds %d records (%v), want %d seeded + %d written", c, err, n, len(acked))
	}
	if at := p.tenants.Placement(a).At["orders"]; at != tenancy.Tagged {
		t.Fatalf("A is at %v after moving back", at)
	}
	for _, from := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated} {
		rep, err := p.tenants.CleanupMove(context.Background(), a, "orders", from)
		if err != nil {
			t.Fatalf("cleaning up A's %s copy: %v", from, err)
		}
		if len(rep) != 1 || len(rep[0].Checked) == 0 {
			t.Fatalf("cleanup of %s checked nothing: %+v", from, rep)
		}
	}
}

// TestMoveOntoAnotherTenantsDatabaseRefused: a move whose dedicated
// target is another tenant's database is refused by the server's
// identity before anything is copied; the tenant stays where it was,
// served, its writes no longer fenced.
func TestMoveOntoAnotherTenantsDatabaseRefused(t *testing.T) {
	p := newPlacedAppA(t, true)
	a := tenancytest.TenantA
	ctx := tenancy.WithTenant(context.Background(), a)
	if _, err := p.docs.Create(ctx, "stays", item{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	// C's database has served C: its identity is held.
	if _, err := p.docs.Create(tenancy.WithTenant(context.Background(), tenancytest.TenantC), "c", item{}); err != nil {
		t.Fatal(err)
	}
	rep, err := p.tenants.Move(context.Background(), a, "orders", tenancy.Dedicated, modules.MoveOptions{})
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("move onto C's database: %v", err)
	}
	for _, s := range rep.Steps {
		if s.Step == modules.MoveCopy {
			t.Fatalf("the refused move copied: %+v", rep.Steps)
		}
	}
	if at := p.tenants.Placement(a).At["orders"]; at != tenancy.None {
		t.Fatalf("A's record after the refused move: %v", at)
	}
	if _, err := p.docs.Get(ctx, "stays"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.docs.Create(ctx, "after", item{}); err != nil {
		t.Fatalf("a write after the refused move: %v", err)
	}
	if _, err := p.docs.Get(tenancy.WithTenant(context.Background(), tenancytest.TenantC), "stays"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("C reads A's record: %v", err)
	}
}
