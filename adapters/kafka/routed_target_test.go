package kafka

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/internal/spelling"
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

// TestRoutedTargetsGenerated: generated spellings of one broker on
// 127.0.0.1 (address forms, the default port, other brokers around it)
// are always one cluster.
func TestRoutedTargetsGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	spell := func() string {
		b := spelling.Loopback(r, false) + spelling.Port(r, "9092", "9092")
		if r.IntN(2) == 0 {
			b = spelling.Case(r, "other-broker") + ":9093," + b
		}
		return b
	}
	for range 1000 {
		a, b := spell(), spell()
		ta, err := routedTargets(routing.Credentials{Endpoint: a})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := routedTargets(routing.Credentials{Endpoint: b})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(ta, func(s string) bool { return slices.Contains(tb, s) }) {
			t.Fatalf("%q and %q: %v vs %v", a, b, ta, tb)
		}
	}
}
