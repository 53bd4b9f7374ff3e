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
// row: at most one batch of A's (the one in flight) plus A's one row ahead
// of B's in the next claim go out between B's write and B's delivery. In
// id order B's row would wait for every one of A's.
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
		written  = -1      // ofA when B's row was written
		before   = -1      // A's rows delivered between B's write and B's delivery
		wroteB   time.Time // when B's row was written
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
			if before < 0 {
				before, tookB = ofA-written, time.Since(wroteB)
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
	written, wroteB = ofA, time.Now()
	mu.Unlock()
	if err := o.Write(tenancy.WithTenant(context.Background(), b), outbox.Message{EventID: "b-1", Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-deliverB:
	case <-time.After(20 * time.Second):
		t.Fatal("B's row not delivered within 20s of its write")
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("B's row delivered %v after its write, after %d of A's rows (A: %d delivered, %d still waiting)",
		tookB.Round(time.Microsecond), before, ofA, backlog-ofA)
	if bound := batch + 1; before > bound {
		t.Errorf("B's row waited behind %d of A's rows; the bound is a batch in flight and A's turn in the next (%d)", before, bound)
	}
}
