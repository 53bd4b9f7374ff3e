package kafka

import (
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/routing"
)

// A cluster is named by each of its bootstrap brokers: order, case,
// spaces, duplicates, the default port, address forms and credentials do
// not make two clusters, and two lists that share a broker are one.
func TestRoutedTargets(t *testing.T) {
	targets := func(c routing.Credentials) []string {
		t.Helper()
		s, err := routedTargets(c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		return s
	}
	overlap := func(a, b []string) bool {
		return slices.ContainsFunc(a, func(s string) bool { return slices.Contains(b, s) })
	}
	base := targets(routing.Credentials{Endpoint: "b1:9092,b2:9093,127.0.0.1:9092"})
	for _, c := range []routing.Credentials{
		{Endpoint: " B2:9093 , b1,b1:9092", User: "u", Secret: "p"},
		{Endpoint: "b2:9093,b1:9092", Params: map[string]string{"tls": "true"}},
		{Endpoint: "b1."},
		{Endpoint: "b3:9092,b2:9093"},
		{Endpoint: "[::ffff:127.0.0.1]:9092"},
		{Endpoint: "[::FFFF:7f00:1]"},
	} {
		if got := targets(c); !overlap(got, base) {
			t.Errorf("%+v: %v, want one of %v", c, got, base)
		}
	}
	for _, ep := range []string{"b1:9094", "b3:9092,b2:9094", "127.0.0.1:9093", "[::1]:9092"} {
		if got := targets(routing.Credentials{Endpoint: ep}); overlap(got, base) {
			t.Errorf("%q shares %v", ep, base)
		}
	}
	if _, err := routedTargets(routing.Credentials{Endpoint: " , "}); err == nil {
		t.Error("no brokers accepted")
	}
}
