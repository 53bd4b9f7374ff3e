package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// cutTransport fails the request at the cut's step, as a process killed
// there would never send it or the rest.
type cutTransport struct {
	next kafkago.RoundTripper
	cut  *tenancytest.Cutter
}

var errCutHere = errors.New("cut here")

func (c cutTransport) RoundTrip(ctx context.Context, addr net.Addr, req protocol.Message) (protocol.Message, error) {
	if c.cut.Step(ctx) {
		return nil, errCutHere
	}
	return c.next.RoundTrip(ctx, addr, req)
}

// TestOffboardCutKafka, on the broker: an offboard of C (its own topic,
// with records) cut at each request it sends in turn (the topics'
// deletion, the verifier's metadata reads), then rerun, leaves no topic
// of C and B's records as they were.
func TestOffboardCutKafka(t *testing.T) {
	broker := strings.Split(testsvc.KafkaBrokers(t), ",")[0]
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	prefix := "tw-" + hex.EncodeToString(b) + "-"
	cut := &tenancytest.Cutter{}
	var d struct {
		fx.In
		Tenants *modules.Tenants
		Orders  *Producer `name:"orders"`
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		Module("events", Brokers(broker), modules.AllowTeardown(),
			modules.Own(func(c *config) {
				c.wrap = func(next kafkago.RoundTripper) kafkago.RoundTripper { return cutTransport{next, cut} }
			}),
			ProducerRoute("orders", ProducerConfig{Topic: naming.PerTenant(prefix + "cut."), Partitions: 1})),
		fx.Populate(&d))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	other, target := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	for _, id := range []tenancy.ID{other, target} {
		t.Cleanup(func() { _, _ = d.Tenants.Offboard(context.Background(), id) })
	}
	write := func(ctx context.Context) error {
		for i := range 5 {
			if err := d.Orders.Produce(ctx, Message{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v"), EventID: fmt.Sprint("ev-", i)}); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := d.Tenants.Provision(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if err := write(tenancy.WithTenant(context.Background(), other)); err != nil {
		t.Fatal(err)
	}
	cuts := tenancytest.CheckOffboardCut(t, tenancytest.OffboardCut{Tenants: d.Tenants, Target: target, Other: other, Write: write, Most: 64, Cut: cut.Cut})
	if cuts == 0 {
		t.Fatal("no offboard was cut")
	}
	t.Logf("the offboard was cut %d times, at each of its requests in turn", cuts)
}
