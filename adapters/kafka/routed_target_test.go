package kafka

import (
	"testing"

	"github.com/tenantwire/tenantwire/routing"
)

// A cluster is its bootstrap brokers: order, case, spaces, duplicates, the
// default port and credentials do not make two clusters.
func TestRoutedTarget(t *testing.T) {
	target := func(c routing.Credentials) string {
		t.Helper()
		s, err := routedTarget(c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		return s
	}
	base := target(routing.Credentials{Endpoint: "b1:9092,b2:9093"})
	for _, c := range []routing.Credentials{
		{Endpoint: " B2:9093 , b1,b1:9092", User: "u", Secret: "p"},
		{Endpoint: "b2:9093,b1:9092", Params: map[string]string{"tls": "true"}},
	} {
		if got := target(c); got != base {
			t.Errorf("%+v: %s, want %s", c, got, base)
		}
	}
	for _, ep := range []string{"b1:9092", "b1:9092,b2:9094", "b3:9092,b2:9093"} {
		if got := target(routing.Credentials{Endpoint: ep}); got == base {
			t.Errorf("%q shares %s", ep, base)
		}
	}
	if _, err := routedTarget(routing.Credentials{Endpoint: " , "}); err == nil {
		t.Error("no brokers accepted")
	}
}
