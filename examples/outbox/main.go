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

func run(w io.Writer) error {
	dsn := os.Getenv("TENANTWIRE_PG_URL")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/tenantwire_test?sslmode=disable"
	}
	b := make([]byte, 4)
	rand.Read(b)
	suffix := hex.EncodeToString(b)
	ordersTable, global, tagged := "ex_orders_"+suffix, "ex_outbox_"+suffix, "ex_outbox_t_"+suffix

	dest := &inbox{got: map[string][]string{}}
	assigned := func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{acme, globex}, nil }
	var (
		client         *postgres.Client
		orders         *postgres.Documents[order]
		events, audits *postgres.Outbox
	)
	app := fx.New(fx.NopLogger,
		postgres.Module("shop", postgres.Connect(dsn),
			// Orders are tagged: one table, every row carries its tenant.
			postgres.Document[order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(ordersTable)}),
			// Tenant-global: one table, rows carry their tenant; a plain
			// relay claims unbound and binds each row's tenant.
			postgres.OutboxRoute("events", postgres.OutboxConfig{Table: naming.Shared(global)}),
			postgres.Relay("events", postgres.RelayConfig{Name: "global-relay", Destination: dest.to("global-relay"), Idle: 20 * time.Millisecond}),
			// Tenant-aware (tagged): a plain relay would be refused at fx.New
			// with tenant_global_required, so it is sharded.
			postgres.OutboxRoute("audits", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared(tagged)}),
			postgres.Relay("audits", postgres.RelayConfig{Tenants: assigned, Name: "sharded-relay", Destination: dest.to("sharded-relay"), Idle: 20 * time.Millisecond}),
		),
		fx.Populate(&orders),
		fx.Invoke(fx.Annotate(func(c *postgres.Client, e, a *postgres.Outbox) { client, events, audits = c, e, a },
			fx.ParamTags(`name:"shop"`, `name:"events"`, `name:"audits"`))),
	)
	if err := app.Err(); err != nil {
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
	defer func() { _, _ = admin.Exec(ctx, "DROP TABLE IF EXISTS "+ordersTable+", "+global+", "+tagged) }()
	// Provisioning creates the tables (all static here, so any tenant
	// will do).
	if err := client.Provision(ctx, acme); err != nil {
		return err
	}

	// Each order and its outbox messages commit together, or not at all:
	// every route of the module called with the unit's ctx runs in its
	// transaction. Order 4 fails after its write, so neither the order
	// nor its messages are kept.
	placed := []struct {
		tenant tenancy.ID
		id     string
		qty    int
	}{{acme, "order-1", 1}, {globex, "order-2", 2}, {acme, "order-3", 3}, {globex, "order-4", 0}}
	delivered := 0
	for _, o := range placed {
		tctx := tenancy.WithTenant(ctx, o.tenant)
		err := client.InTx(tctx, func(ctx context.Context) error {
			if _, err := orders.Create(ctx, o.id, order{Qty: o.qty}); err != nil {
				return err
			}
			if err := events.Write(ctx, outbox.Message{Topic: "orders", Payload: []byte(o.id + " placed")}); err != nil {
				return err
			}
			if err := audits.Write(ctx, outbox.Message{Topic: "audit", Payload: []byte(o.id + " audited")}); err != nil {
				return err
			}
			if o.qty == 0 {
				return errEmptyOrder // after the writes: the unit rolls them back
			}
			return nil
		})
		switch {
		case errors.Is(err, errEmptyOrder):
			_, gerr := orders.Get(tctx, o.id)
			fmt.Fprintf(w, "%s rolled back (%v): stored=%v\n", o.id, err, gerr == nil)
		case err != nil:
			return err
		default:
			delivered += 2
		}
	}

	if err := app.Start(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		dest.mu.Lock()
		n := dest.n
		dest.mu.Unlock()
		if n >= delivered {
			break
		}
		if time.Now().After(deadline) {
			_ = app.Stop(ctx)
			return errors.New("rows were not delivered in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := app.Stop(ctx); err != nil {
		return err
	}
	keys := make([]string, 0, len(dest.got))
	for k := range dest.got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		got := dest.got[k]
		slices.Sort(got)
		fmt.Fprintf(w, "%-21s received %s\n", k, strings.Join(got, ", "))
	}
	return nil
}
