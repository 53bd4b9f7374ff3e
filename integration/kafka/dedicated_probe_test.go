package kafka_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRoutedBootstrapMixingClusters (found hole, fixed): tenant A holds
// the second cluster; tenants B0..B11 each resolve to a bootstrap list
// naming a broker of each cluster. kafka-go dials a random bootstrap
// broker, so when the cluster id came from the first cluster the tenant
// was bound, and its later dials reach A's cluster (here: its records land
// in A's topic). Every bootstrap broker is now asked, and a list whose
// brokers report two clusters serves nobody.
func TestRoutedBootstrapMixingClusters(t *testing.T) {
	s := newSpace(t)
	first, topic := s.broker, s.name("orders")
	second := testsvc.KafkaSecondBroker(t)
	s.alsoOn(t, second)
	_, port2, _ := net.SplitHostPort(second)
	ctx := context.Background()
	var served int
	var want int64
	for round := range 12 { // the bootstrap broker asked first is random
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			creds := map[tenancy.ID]routing.Credentials{
				tenancytest.TenantA: {Endpoint: "localhost:" + port2},
				tenancytest.TenantB: {Endpoint: first + "," + second},
			}
			prod, prov := routedApp(t, topic, func(_ context.Context, id tenancy.ID) (routing.Credentials, error) { return creds[id], nil }, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}})
			if err := prov.Provision(ctx, tenancytest.TenantA); err != nil {
				t.Fatal(err)
			}
			if err := prod.Produce(tenancy.WithTenant(ctx, tenancytest.TenantA), kafka.Message{Value: []byte("a")}); err != nil {
				t.Fatal(err)
			}
			want++
			if err := prov.Provision(ctx, tenancytest.TenantB); err != nil {
				if tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
					t.Errorf("B refused with %v, want dedicated_target_shared", err)
				}
				return
			}
			served++
			// Each idle connection closes after a second; the next dial
			// picks a bootstrap broker again.
			for range 5 {
				_ = prod.Produce(tenancy.WithTenant(ctx, tenancytest.TenantB), kafka.Message{Value: []byte("b")})
				time.Sleep(1200 * time.Millisecond)
			}
		})
	}
	if n := records(t, second, topic); n != want || served > 0 {
		t.Fatalf("%d of 12 tenants with a bootstrap list spanning two clusters were served; A's topic holds %d records, want only A's %d", served, n, want)
	}
}

// TestRoutedOtherListenerOfOneBroker: tenant B reaching tenant A's broker
// through its SASL listener (another port, a login of its own) is refused
// by the cluster id the broker reports.
func TestRoutedOtherListenerOfOneBroker(t *testing.T) {
	s := newSpace(t)
	broker, topic := s.broker, s.name("orders")
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: broker},
		tenancytest.TenantB: {Endpoint: testsvc.KafkaSASLBroker(t), User: testsvc.KafkaSASLUser, Secret: testsvc.KafkaSASLSecret},
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
		t.Fatalf("B on A's broker through the SASL listener: %v", err)
	}
	if n := records(t, broker, topic); n != 1 {
		t.Fatalf("%d records on A's topic, want only A's", n)
	}
}
