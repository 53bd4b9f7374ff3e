// Command outbox shows the transactional outbox on PostgreSQL and the two
// ways to drain it. Each order is stored through a document route with its
// outbox messages in one unit of work (Client.InTx): they commit together,
// and an order that fails after its write leaves neither the order nor
// its messages. A tenant-global relay drains a tenant-global outbox,
// binding each row's tenant as it forwards it, and a sharded relay drains
// a tenant-aware outbox with one bound pass per assigned tenant. Both
// deliver to a function destination that prints what each tenant
// received. It needs PostgreSQL (TENANTWIRE_PG_URL), creates uniquely
// named tables, drops them and exits.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

var (
	acme   = tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	globex = tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
	names  = map[tenancy.ID]string{acme: "acme", globex: "globex"}
)

// order is what the orders route stores.
type order struct {
	Qty int `json:"qty"`
}

var errEmptyOrder = errors.New("an order needs at least one item")

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "outbox example:", err)
		os.Exit(1)
	}
}

// inbox is the function destination: what each relay delivered, per
// tenant bound at delivery.
type inbox struct {
	mu  sync.Mutex
	got map[string][]string // "<relay> <tenant>" → payloads
	n   int
}

func (in *inbox) to(relay string) outbox.Destination {
	return outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
		id, _ := tenancy.FromContext(ctx) // the relay bound the row's tenant
		in.mu.Lock()
		defer in.mu.Unlock()
		k := relay + " " + names[id]
		in.got[k] = append(in.got[k], string(m.Payload))
		in.n++
		return nil
	})
}

func (in *inbox) count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.n
}

// print writes what each relay delivered to each tenant, in order.
func (in *inbox) print(w io.Writer) {
	keys := make([]string, 0, len(in.got))
	for k := range in.got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		got := in.got[k]
		slices.Sort(got)
		fmt.Fprintf(w, "%-21s received %s\n", k, strings.Join(got, ", "))
	}
}

func run(w io.Writer) error {
	dsn := os.Getenv("TENANTWIRE_PG_URL")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/tenantwire_test?sslmode=disable"
	}
	tables := uniqueTables()
	dest := &inbox{got: map[string][]string{}}
	s, err := wire(dsn, tables, dest)
	if err != nil {
		return err
	}
	ctx := context.Background()
	// Clean-up drops the example's tables on a connection of its own: the
	// module's pool closes when the app stops.
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	defer func() {
		_, _ = admin.Exec(ctx, "DROP TABLE IF EXISTS "+tables.orders+", "+tables.global+", "+tables.tagged)
	}()
	// Provisioning creates the tables (all static here, so any tenant
	// will do).
	if err := s.client.Provision(ctx, acme); err != nil {
		return err
	}

	messages, err := s.place(ctx, w)
	if err != nil {
		return err
	}
	if err := s.drain(ctx, dest, messages); err != nil {
		return err
	}
	dest.print(w)
	return nil
}

// tableSet names the example's own tables, uniquely per run.
type tableSet struct{ orders, global, tagged string }

func uniqueTables() tableSet {
	b := make([]byte, 4)
	rand.Read(b)
	suffix := hex.EncodeToString(b)
	return tableSet{orders: "ex_orders_" + suffix, global: "ex_outbox_" + suffix, tagged: "ex_outbox_t_" + suffix}
}

// shop is the app and the routes the example calls.
type shop struct {
	app            *fx.App
	client         *postgres.Client
	orders         *postgres.Documents[order]
	events, audits *postgres.Outbox
}

// wire builds the shop module: the orders route, two outboxes and a relay
// for each, both delivering to dest.
func wire(dsn string, t tableSet, dest *inbox) (*shop, error) {
	assigned := func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{acme, globex}, nil }
	var s shop
	s.app = fx.New(fx.NopLogger,
		postgres.Module("shop", postgres.Connect(dsn),
			// Orders are tagged: one table, every row carries its tenant.
			postgres.Document[order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(t.orders)}),
			// Tenant-global: one table, rows carry their tenant; a plain
			// relay claims unbound and binds each row's tenant.
			postgres.OutboxRoute("events", postgres.OutboxConfig{Table: naming.Shared(t.global)}),
			postgres.Relay("events", postgres.RelayConfig{Name: "global-relay", Destination: dest.to("global-relay"), Idle: 20 * time.Millisecond}),
			// Tenant-aware (tagged): a plain relay would be refused at fx.New
			// with tenant_global_required, so it is sharded.
			postgres.OutboxRoute("audits", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared(t.tagged)}),
			postgres.Relay("audits", postgres.RelayConfig{WorkerConfig: shards.WorkerConfig{Tenants: assigned}, Name: "sharded-relay", Destination: dest.to("sharded-relay"), Idle: 20 * time.Millisecond}),
		),
		fx.Populate(&s.orders),
		fx.Invoke(fx.Annotate(func(c *postgres.Client, e, a *postgres.Outbox) { s.client, s.events, s.audits = c, e, a },
			fx.ParamTags(`name:"shop"`, `name:"events"`, `name:"audits"`))),
	)
	return &s, s.app.Err()
}

// place stores each order with its outbox messages, and returns how many
// messages the relays are to deliver. Order 4 fails after its write, so
// neither the order nor its messages are kept.
func (s *shop) place(ctx context.Context, w io.Writer) (messages int, err error) {
	placed := []struct {
		tenant tenancy.ID
		id     string
		qty    int
	}{{acme, "order-1", 1}, {globex, "order-2", 2}, {acme, "order-3", 3}, {globex, "order-4", 0}}
	for _, o := range placed {
		tctx := tenancy.WithTenant(ctx, o.tenant)
		err := s.client.InTx(tctx, func(ctx context.Context) error { return s.writeOrder(ctx, o.id, o.qty) })
		switch {
		case errors.Is(err, errEmptyOrder):
			_, gerr := s.orders.Get(tctx, o.id)
			fmt.Fprintf(w, "%s rolled back (%v): stored=%v\n", o.id, err, gerr == nil)
		case err != nil:
			return 0, err
		default:
			messages += 2
		}
	}
	return messages, nil
}

// writeOrder is one order's unit of work: the order and its outbox messages
// commit together, or not at all, as every route of the module called
// with the unit's ctx runs in its transaction.
func (s *shop) writeOrder(ctx context.Context, id string, qty int) error {
	if _, err := s.orders.Create(ctx, id, order{Qty: qty}); err != nil {
		return err
	}
	if err := s.events.Write(ctx, outbox.Message{Topic: "orders", Payload: []byte(id + " placed")}); err != nil {
		return err
	}
	if err := s.audits.Write(ctx, outbox.Message{Topic: "audit", Payload: []byte(id + " audited")}); err != nil {
		return err
	}
	if qty == 0 {
		return errEmptyOrder // after the writes: the unit rolls them back
	}
	return nil
}

// drain starts the app, so its relays run, until dest has received
// messages, and stops it.
func (s *shop) drain(ctx context.Context, dest *inbox, messages int) error {
	if err := s.app.Start(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for dest.count() < messages {
		if time.Now().After(deadline) {
			_ = s.app.Stop(ctx)
			return errors.New("rows were not delivered in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s.app.Stop(ctx)
}
