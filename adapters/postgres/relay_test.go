package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var tenantC = tenancy.MustParseID("6f1c2b3a-0000-4000-8000-00000000000c")

var three = []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenantC}

// sink is a destination recording every delivery and its binding.
type sink struct {
	mu    sync.Mutex
	count map[string]int    // event id → deliveries
	where map[string]string // event id → scope it was delivered under
	slow  time.Duration
}

func newSink() *sink { return &sink{count: map[string]int{}, where: map[string]string{}} }

func (s *sink) Deliver(ctx context.Context, m outbox.Message) error {
	if s.slow > 0 {
		time.Sleep(s.slow)
	}
	scope := "none"
	if id, ok := tenancy.FromContext(ctx); ok {
		scope = id.String()
	} else if tenancy.IsGlobal(ctx) {
		scope = "global"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count[m.EventID]++
	s.where[m.EventID] = scope
	return nil
}

// waitAll waits until every event id was delivered at least once.
func (s *sink) waitAll(t *testing.T, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		missing := 0
		for _, id := range ids {
			if s.count[id] == 0 {
				missing++
			}
		}
		s.mu.Unlock()
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d rows never delivered", missing, len(ids))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// times is how many times the event id was delivered.
func (s *sink) times(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[id]
}

func (s *sink) delivered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.count)
}

// build makes an app without starting it, so tables can be provisioned
// and rows written before any worker runs.
func build(t *testing.T, opts ...fx.Option) (*fx.App, *postgres.Client) {
	t.Helper()
	var c *postgres.Client
	app := fx.New(append([]fx.Option{fx.NopLogger, named("pg", &c)}, opts...)...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return app, c
}

func startApp(t *testing.T, app *fx.App) {
	t.Helper()
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
}

// fill writes n rows per tenant, each under its own tenant, and returns
// their event ids (keyed to their tenant).
func fill(t *testing.T, o *postgres.Outbox, n int, tenants ...tenancy.ID) map[string]tenancy.ID {
	t.Helper()
	out := map[string]tenancy.ID{}
	for _, id := range tenants {
		var msgs []outbox.Message
		for i := range n {
			ev := fmt.Sprintf("%s-%d-%s", unique(), i, id.Hex()[:6])
			msgs = append(msgs, outbox.Message{EventID: ev, Topic: "orders", Payload: []byte(ev), Headers: map[string]string{"k": "v"}})
			out[ev] = id
		}
		if err := o.Write(tenancy.WithTenant(context.Background(), id), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func keys(m map[string]tenancy.ID) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func fast(dest outbox.Destination) postgres.RelayConfig {
	return postgres.RelayConfig{Destination: dest, BatchSize: 10, Idle: 20 * time.Millisecond, WorkerConfig: shards.WorkerConfig{MaxBackoff: 200 * time.Millisecond, Backoff: 20 * time.Millisecond}}
}

func providing(ids ...tenancy.ID) shards.TenantsFunc {
	return func(context.Context) ([]tenancy.ID, error) { return ids, nil }
}

// sharded is rc run one bound pass per tenant of tenants.
func sharded(rc postgres.RelayConfig, tenants shards.TenantsFunc) postgres.RelayConfig {
	rc.Tenants = tenants
	return rc
}

// TestRelayBindsEachRowsTenant: rows of three tenants, each forwarded
// bound to its own tenant, by the plain relay over a tenant-global outbox
// and by the sharded relay over tagged and per-tenant outboxes.
func TestRelayBindsEachRowsTenant(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	url := testsvc.PostgresURL(t)
	cases := map[string]func(s *sink, table string) []postgres.Option{
		"plain over tenant-global": func(s *sink, table string) []postgres.Option {
			return []postgres.Option{postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared(table)}), postgres.Relay("out", fast(s))}
		},
		"sharded over tagged": func(s *sink, table string) []postgres.Option {
			return []postgres.Option{postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared(table)}),
				postgres.Relay("out", sharded(fast(s), providing(three...)))}
		},
		"sharded over per-tenant": func(s *sink, table string) []postgres.Option {
			return []postgres.Option{postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("out")}),
				postgres.Relay("out", sharded(fast(s), providing(three...)))}
		},
		"sharded over routed": func(s *sink, table string) []postgres.Option {
			return []postgres.Option{postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared(table)}),
				postgres.Relay("out", sharded(fast(s), providing(three...)))}
		},
	}
	for name, wire := range cases {
		t.Run(name, func(t *testing.T) {
			run := unique()
			s := newSink()
			var o *postgres.Outbox
			conn := postgres.Connect(url)
			if name == "sharded over routed" {
				_, dsns := databases(t, len(three), "")
				creds := map[tenancy.ID]routing.Credentials{}
				for i, id := range three {
					creds[id] = routing.Credentials{Endpoint: dsns[i]}
				}
				conn = postgres.Routed(resolverOf(creds), postgres.RoutedConfig{})
			}
			mod := append([]postgres.Option{conn, postgres.SchemaPrefix("tw" + run + "_")}, wire(s, "out_"+run)...)
			app, c := build(t, postgres.Module("pg", mod...), named("out", &o))
			provision(t, c, three...)
			rows := fill(t, o, 5, three...)
			startApp(t, app)
			s.waitAll(t, keys(rows), 10*time.Second)
			s.mu.Lock()
			defer s.mu.Unlock()
			for ev, id := range rows {
				if s.where[ev] != id.String() {
					t.Errorf("%s of %s delivered under %s", ev, id, s.where[ev])
				}
				if s.count[ev] != 1 {
					t.Errorf("%s delivered %d times", ev, s.count[ev])
				}
			}
		})
	}
}
