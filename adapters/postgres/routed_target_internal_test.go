package postgres

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/internal/spelling"
	"github.com/tenantwire/tenantwire/routing"
)

func targetsOf(t *testing.T, c routing.Credentials) []string {
	t.Helper()
	s, err := routedTargets(c)
	if err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	return s
}

func overlap(a, b []string) bool {
	return slices.ContainsFunc(a, func(s string) bool { return slices.Contains(b, s) })
}

// TestRoutedTargets: a target is each host with its port, and the
// database: user, password, other parameters, host case, address forms
// and the Params override do not make two targets; the database left out
// is the user's.
func TestRoutedTargets(t *testing.T) {
	base := targetsOf(t, routing.Credentials{Endpoint: "postgres://a@db.example:5432/shop?sslmode=disable"})
	for _, c := range []routing.Credentials{
		{Endpoint: "postgres://b:pw@DB.example/shop?sslmode=disable&application_name=x&search_path=t1"},
		{Endpoint: "postgres://a@db.example.:5432/shop"},
		{Endpoint: "postgres://a@db.example:5432/other?sslmode=disable", Params: map[string]string{"database": "shop"}},
		{Endpoint: "host=db.example port=5432 dbname=shop user=c sslmode=disable", User: "d", Secret: "s"},
		{Endpoint: "postgres://shop@db.example:5432/"},
		{Endpoint: "postgres://db.example:5432", User: "shop"},
		{Endpoint: "postgres://a@db.example:5432,db2.example:5433/shop"},
		{Endpoint: "host=db2.example,db.example port=5433,5432 dbname=shop"},
	} {
		if got := targetsOf(t, c); !overlap(got, base) {
			t.Errorf("%+v: %v, want one of %v", c, got, base)
		}
	}
	for _, c := range []routing.Credentials{
		{Endpoint: "postgres://a@db.example:5432/shop2?sslmode=disable"},
		{Endpoint: "postgres://a@db.example:5433/shop?sslmode=disable"},
		{Endpoint: "postgres://a@db2.example:5432/shop?sslmode=disable"},
		{Endpoint: "postgres://a@db.example:5432/shop?sslmode=disable", Params: map[string]string{"database": "x"}},
		{Endpoint: "postgres://other@db.example:5432/"},
	} {
		if got := targetsOf(t, c); overlap(got, base) {
			t.Errorf("%+v shares %v", c, base)
		}
	}
	if _, err := routedTargets(routing.Credentials{Endpoint: "postgres://a@db:notaport/x"}); err == nil {
		t.Error("an invalid DSN was accepted")
	}
}

// TestRoutedTargetsAddressForms: generated spellings of one database on
// 127.0.0.1 (address forms, percent-encoding, the default port, the
// database in the path, in Params or as the user's default, other options)
// are always one target, and never the IPv6 loopback's.
func TestRoutedTargetsAddressForms(t *testing.T) {
	spell := func(r *rand.Rand, db string) routing.Credentials {
		h := spelling.Loopback(r, true) + spelling.Port(r, "5432", "5432")
		switch r.IntN(3) {
		case 0:
			return routing.Credentials{Endpoint: fmt.Sprintf("postgres://u@%s/%s?application_name=%d", h, db, r.IntN(9))}
		case 1:
			return routing.Credentials{Endpoint: fmt.Sprintf("postgresql://%s/x", h), User: "u", Params: map[string]string{"database": db}}
		default:
			return routing.Credentials{Endpoint: fmt.Sprintf("postgres://%s@%s/", db, h)}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	v6 := targetsOf(t, routing.Credentials{Endpoint: "postgres://u@[::1]/shop"})
	for range 1000 {
		a, b := spell(r, "shop"), spell(r, "shop")
		ta, tb := targetsOf(t, a), targetsOf(t, b)
		if !overlap(ta, tb) {
			t.Fatalf("%+v and %+v: %v vs %v", a, b, ta, tb)
		}
		if overlap(ta, v6) {
			t.Fatalf("IPv4 and IPv6 loopback taken as one name: %v", ta)
		}
	}
}
