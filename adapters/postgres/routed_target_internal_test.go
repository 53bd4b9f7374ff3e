package postgres

import (
	"testing"

	"github.com/tenantwire/tenantwire/routing"
)

// A target is hosts, port and database: user, password, other parameters,
// host case and the Params override spelling do not make two targets.
func TestRoutedTarget(t *testing.T) {
	target := func(c routing.Credentials) string {
		t.Helper()
		s, err := routedTarget(c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		return s
	}
	base := target(routing.Credentials{Endpoint: "postgres://a@db.example:5432/shop?sslmode=disable"})
	for _, c := range []routing.Credentials{
		{Endpoint: "postgres://b:pw@DB.example/shop?sslmode=disable&application_name=x&search_path=t1"},
		{Endpoint: "postgres://a@db.example:5432/other?sslmode=disable", Params: map[string]string{"database": "shop"}},
		{Endpoint: "host=db.example port=5432 dbname=shop user=c sslmode=disable", User: "d", Secret: "s"},
	} {
		if got := target(c); got != base {
			t.Errorf("%+v: %s, want %s", c, got, base)
		}
	}
	for _, c := range []routing.Credentials{
		{Endpoint: "postgres://a@db.example:5432/shop2?sslmode=disable"},
		{Endpoint: "postgres://a@db.example:5433/shop?sslmode=disable"},
		{Endpoint: "postgres://a@db2.example:5432/shop?sslmode=disable"},
		{Endpoint: "postgres://a@db.example:5432/shop?sslmode=disable", Params: map[string]string{"database": "x"}},
	} {
		if got := target(c); got == base {
			t.Errorf("%+v shares %s", c, base)
		}
	}
	if _, err := routedTarget(routing.Credentials{Endpoint: "postgres://a@db:notaport/x"}); err == nil {
		t.Error("an invalid DSN was accepted")
	}
}
