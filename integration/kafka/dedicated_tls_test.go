package kafka_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRoutedTLSParam: Params["tls"] changes how a broker is reached, not
// which cluster it is. B, asking for TLS to A's broker, is refused as
// A's cluster; C, asking for TLS to a plaintext broker, is served by
// nobody (the handshake fails); D, whose tls value is neither "true" nor
// "false", is refused instead of being connected in plaintext (found
// hole, fixed: any value but "true" meant plaintext).
func TestRoutedTLSParam(t *testing.T) {
	s := newSpace(t)
	second := strings.Split(testsvc.KafkaSecondBroker(t), ",")[0]
	s.alsoOn(t, second)
	broker, topic := s.broker, s.name("orders")
	tenantC := tenancy.MustParseID("7150000c-0000-4000-8000-00000000000c")
	tenantD := tenancy.MustParseID("7150000d-0000-4000-8000-00000000000d")
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: broker},
		tenancytest.TenantB: {Endpoint: broker, Params: map[string]string{"tls": "true"}},
		tenantC:             {Endpoint: second, Params: map[string]string{"tls": "true"}},
		tenantD:             {Endpoint: second, Params: map[string]string{"tls": "TRUE"}},
	}
	prod, prov := routedApp(t, topic, func(_ context.Context, id tenancy.ID) (routing.Credentials, error) { return creds[id], nil }, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}})
	ctx := context.Background()
	if err := prov.Provision(ctx, tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	if err := prod.Produce(tenancy.WithTenant(ctx, tenancytest.TenantA), kafka.Message{Value: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := prod.Produce(tenancy.WithTenant(ctx, tenancytest.TenantB), kafka.Message{Value: []byte("b")}); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("B on A's broker with TLS: %v", err)
	}
	if n := records(t, broker, topic); n != 1 {
		t.Fatalf("%d records on A's topic, want only A's", n)
	}
	if err := prov.Provision(ctx, tenantD); err == nil || !strings.Contains(err.Error(), "tls") {
		t.Fatalf("D's tls=TRUE: %v, want a refusal naming tls (it was connected in plaintext)", err)
	}
	if err := prov.Provision(ctx, tenantC); err == nil {
		t.Fatal("C served over TLS by a plaintext broker")
	}
}
