package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRelayBacklogDoesNotDelayAnotherTenant: a tenant-global relay is
// draining tenant A's backlog of 100,000 rows when tenant B writes one
// row: once B's write has committed, at most one batch of A's (the one in
// flight, perhaps claimed while the write was under way) plus A's one row
// ahead of B's in the next claim go out before B's row; counted from when
// the write began, at most two batches and one row. In id order B's row
// would wait for every one of A's.
func TestRelayBacklogDoesNotDelayAnotherTenant(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// A subtest, so that the app stops before the leak check.
	t.Run("drain", relayBacklog)
}

func relayBacklog(t *testing.T) {
	const backlog, batch = 100_000, 100
	table := "backlog_" + unique()
	a, b := tenancytest.TenantA, tenancytest.TenantB

	var (
		mu       sync.Mutex
		ofA      int       // A's rows delivered so far
		began    int       // ofA when B's write began
		written  int       // ofA when B's write had committed
		atB      = -1      // ofA when B's row was delivered
		wroteB   time.Time // when B's write began
		tookB    time.Duration
		deliverB = make(chan struct{})
	)
	dest := outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
		mu.Lock()
		defer mu.Unlock()
		switch m.Tenant {
		case a:
			ofA++
		case b:
			if atB < 0 {
				atB, tookB = ofA, time.Since(wroteB)
				close(deliverB)
			}
		}
		return nil
	})
	rc := fast(dest)
	rc.BatchSize = batch
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", append(direct.dsn(t),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared(table)}), postgres.Relay("out", rc))...), named("out", &o))
	provision(t, c, a)
	begin := time.Now()
	if _, err := superuser(t).Exec(context.Background(), "INSERT INTO "+pgx.Identifier{table}.Sanitize()+
		" (tenant_id, event_id, topic, payload) SELECT $1, 'a-' || g, 't', '\\x00'::bytea FROM generate_series(1, $2) g", a.Bytes(), backlog); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows of A written in %v", backlog, time.Since(begin).Round(time.Millisecond))
	startApp(t, app)

	// B writes while the relay is well into A's backlog.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := ofA
		mu.Unlock()
		if n >= 10*batch {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of A's rows delivered in 20s", n)
		}
	}
	mu.Lock()
	began, wroteB = ofA, time.Now()
	mu.Unlock()
	if err := o.Write(tenancy.WithTenant(context.Background(), b), outbox.Message{EventID: "b-1", Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	written = ofA
	mu.Unlock()
	select {
	case <-deliverB:
	case <-time.After(20 * time.Second):
		t.Fatal("B's row not delivered within 20s of its write")
	}
	mu.Lock()
	defer mu.Unlock()
	// B's row may go out before the write call returns.
	after, since := max(0, atB-written), atB-began
	t.Logf("B's row delivered %v after its write began, after %d of A's rows since it committed, %d since it began (A: %d delivered, %d still waiting)",
		tookB.Round(time.Microsecond), after, since, ofA, backlog-ofA)
	if bound := batch + 1; after > bound {
		t.Errorf("B's row waited behind %d of A's rows after its write committed; the bound is a batch in flight and A's turn in the next (%d)", after, bound)
	}
	if bound := 2*batch + 1; since > bound {
		t.Errorf("B's row waited behind %d of A's rows after its write began; the bound is two batches and A's turn (%d)", since, bound)
	}
}
