package mongo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/internal/spelling"
	"github.com/tenantwire/tenantwire/routing"
)

// A target is each host with the database: credentials, options, the auth
// database, host order, case, percent-encoding, address forms and the
// default port do not make two targets, and host lists that share a host
// are one.
func TestRoutedTargets(t *testing.T) {
	targets := func(c routing.Credentials) []string {
		t.Helper()
		s, err := routedTargets(c, "app")
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		return s
	}
	overlap := func(a, b []string) bool {
		return slices.ContainsFunc(a, func(s string) bool { return slices.Contains(b, s) })
	}
	base := targets(routing.Credentials{Endpoint: "mongodb://h1:27017,127.0.0.1:27018/"})
	for _, c := range []routing.Credentials{
		{Endpoint: "mongodb://u:p@H2:27019,h1/admin?appName=x", User: "v", Secret: "q"},
		{Endpoint: "mongodb://h1:27017", Params: map[string]string{"database": "APP"}},
		{Endpoint: "mongodb://127.0.0.1%3A27018/"},
		{Endpoint: "mongodb://%31%32%37.0.0.1:27018/"},
		{Endpoint: "mongodb://[::ffff:127.0.0.1]:27018/"},
		{Endpoint: "mongodb://h1./"},
	} {
		if got := targets(c); !overlap(got, base) {
			t.Errorf("%+v: %v, want one of %v", c, got, base)
		}
	}
	for _, c := range []routing.Credentials{
		{Endpoint: "mongodb://h1:27017,h2:27018/", Params: map[string]string{"database": "other"}},
		{Endpoint: "mongodb://h2:27017/"},
		{Endpoint: "mongodb://127.0.0.1:27017/"},
		{Endpoint: "mongodb+srv://h1/"},
	} {
		if got := targets(c); overlap(got, base) {
			t.Errorf("%+v shares %v", c, base)
		}
	}
	for _, bad := range []string{"", "h1:27017", "mongodb://", "http://h1"} {
		if _, err := routedTargets(routing.Credentials{Endpoint: bad}, "app"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestRoutedTargetsGenerated: generated spellings of one database on
// 127.0.0.1 (address forms, percent-encoding, the default port, options,
// the database's case, in Params or the module's) are always one target.
func TestRoutedTargetsGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	spell := func() routing.Credentials {
		c := routing.Credentials{Endpoint: fmt.Sprintf("mongodb://%s%s/admin?appName=%d", spelling.Loopback(r, true), spelling.Port(r, "27017", "27017"), r.IntN(9))}
		if r.IntN(2) == 0 {
			c.Params = map[string]string{"database": spelling.Case(r, "app")}
		}
		return c
	}
	for range 1000 {
		a, b := spell(), spell()
		ta, err := routedTargets(a, "app")
		if err != nil {
			t.Fatalf("%+v: %v", a, err)
		}
		tb, err := routedTargets(b, "app")
		if err != nil {
			t.Fatalf("%+v: %v", b, err)
		}
		if !slices.ContainsFunc(ta, func(s string) bool { return slices.Contains(tb, s) }) {
			t.Fatalf("%+v and %+v: %v vs %v", a, b, ta, tb)
		}
	}
}
