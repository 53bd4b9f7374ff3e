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

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// moveRecords is how many records A holds when it is moved: 2,000 by
// default, TENANTWIRE_MOVE_RECORDS (make soak: 100,000) for the long run.
func moveRecords(t *testing.T) int { return tenancytest.MoveRecords(t, 2000) }

// TestMoveUnderLoad moves tenant A tagged → namespace → dedicated →
// tagged while 32 goroutines write and read A and write B: no
// acknowledged write is lost, no read of A sees fewer records than A held
// before the moves began (a partial tenant) or any of B's, writes refused
// under the fence are tenant_moving, and the old copies are erased by
// CleanupMove. The longest write fence and each move's time are printed.
func TestMoveUnderLoad(t *testing.T) {
	p := newPlacedApp(t)
	a := tenancytest.TenantA
	n := moveRecords(t)
	seedMoving(t, p, n)
	load := startMoveLoad(p.docs, n)
	var longest time.Duration
	for _, to := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated, tenancy.Tagged} {
		time.Sleep(100 * time.Millisecond) // load before each move
		began := time.Now()
		rep, err := p.tenants.Move(context.Background(), a, "orders", to, modules.MoveOptions{})
		if err != nil {
			load.end(t)
			t.Fatalf("moving A to %s: %v", to, err)
		}
		longest = max(longest, rep.Fenced)
		t.Logf("move %s → %s: %d records, writes fenced %v, whole move %v", rep.From, rep.To, rep.Records, rep.Fenced.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		for _, s := range rep.Steps {
			t.Logf("  %s: %v %s", s.Step, s.Ended.Sub(s.Started).Round(time.Millisecond), s.Detail)
		}
	}
	time.Sleep(100 * time.Millisecond)
	load.end(t)
	t.Logf("moved %d records three times under load: longest write fence %v; %d writes refused under the fence and retried; %d acknowledged writes of A", n, longest.Round(time.Millisecond), load.fenced.Load(), len(load.acked))
	load.check(t, p.docs, n)
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

// seedMoving gives tenant A n records in the shared table, and B one,
// "b-only", which A must never read.
func seedMoving(t *testing.T, p placedApp, n int) {
	t.Helper()
	exec(t, superuser(t), `INSERT INTO public.`+p.table+` (tenant_id, id, version, value)
		SELECT $1, 'seed-' || g, 1, jsonb_build_object('name', 'seed', 'n', g) FROM generate_series(1, $2) g`, tenancytest.TenantA.Bytes(), n)
	if _, err := p.docs.Create(tenancy.WithTenant(context.Background(), tenancytest.TenantB), "b-only", item{Name: "b"}); err != nil {
		t.Fatal(err)
	}
}

// moveLoad is the load a move of A runs under (seedMoving's records): 16
// writers create records, of B every fourth and of A the rest, retrying a
// write the fence refuses (tenant_moving); 16 readers check that A never
// reads B's record, always reads its seed records, and never counts fewer
// than the n it held before.
type moveLoad struct {
	stop     atomic.Bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	acked    []string // A's acknowledged writes
	fenced   atomic.Int64
	failures chan error
}

func startMoveLoad(docs *postgres.Documents[item], n int) *moveLoad {
	ctxA, ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantA), tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	l := &moveLoad{failures: make(chan error, 64)}
	fail := func(err error) {
		select {
		case l.failures <- err:
		default:
		}
	}
	const writers, readers = 16, 16
	for g := range writers {
		l.wg.Go(func() {
			for i := 0; !l.stop.Load(); i++ {
				ctx, id := ctxA, fmt.Sprintf("w-%d-%d", g, i)
				if g%4 == 3 {
					ctx = ctxB
				}
				for {
					_, err := docs.Create(ctx, id, item{Name: "w", N: i})
					if tenancy.CodeOf(err) == tenancy.CodeTenantMoving {
						l.fenced.Add(1)
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
					l.mu.Lock()
					l.acked = append(l.acked, id)
					l.mu.Unlock()
				}
			}
		})
	}
	for g := range readers {
		l.wg.Go(func() {
			for i := 0; !l.stop.Load(); i++ {
				if g%2 == 0 {
					if _, err := docs.Get(ctxA, "b-only"); !errors.Is(err, document.ErrNotFound) {
						fail(fmt.Errorf("A read B's record: %v", err))
					}
					if _, err := docs.Get(ctxA, "seed-"+strconv.Itoa(1+i%n)); err != nil {
						fail(fmt.Errorf("A's seed record: %w", err))
					}
					continue
				}
				if c, err := docs.Count(ctxA, document.Query{}); err != nil || c < n {
					fail(fmt.Errorf("A counts %d records (%v), held %d before the moves", c, err, n))
				}
			}
		})
	}
	return l
}

// end stops the load, waits for it, and fails t with what it saw go
// wrong.
func (l *moveLoad) end(t *testing.T) {
	t.Helper()
	if l.stop.Swap(true) {
		return
	}
	l.wg.Wait()
	close(l.failures)
	for err := range l.failures {
		t.Error(err)
	}
}

// check reads every acknowledged write of A back through docs, and A's
// count: the n seeded and the written, none lost, none doubled.
func (l *moveLoad) check(t *testing.T, docs *postgres.Documents[item], n int) {
	t.Helper()
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	for _, id := range l.acked {
		if _, err := docs.Get(ctxA, id); err != nil {
			t.Fatalf("acknowledged write %s of A: %v", id, err)
		}
	}
	if c, err := docs.Count(ctxA, document.Query{}); err != nil || c != n+len(l.acked) {
		t.Fatalf("A holds %d records (%v), want %d seeded + %d written", c, err, n, len(l.acked))
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
