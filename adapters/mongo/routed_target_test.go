package mongo

import (
	"testing"

	"github.com/tenantwire/tenantwire/routing"
)

// A target is hosts and database: credentials, options, the auth database,
// host order, case and the default port do not make two targets.
func TestRoutedTarget(t *testing.T) {
	target := func(c routing.Credentials) string {
		t.Helper()
		s, err := routedTarget(c, "app")
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		return s
	}
	base := target(routing.Credentials{Endpoint: "mongodb://h1:27017,h2:27018/"})
	for _, c := range []routing.Credentials{
		{Endpoint: "mongodb://u:p@H2:27018,h1/admin?appName=x", User: "v", Secret: "q"},
		{Endpoint: "mongodb://h2:27018,h1:27017", Params: map[string]string{"database": "app"}},
	} {
		if got := target(c); got != base {
			t.Errorf("%+v: %s, want %s", c, got, base)
		}
	}
	for _, c := range []routing.Credentials{
		{Endpoint: "mongodb://h1:27017,h2:27018/", Params: map[string]string{"database": "other"}},
		{Endpoint: "mongodb://h1:27017/"},
		{Endpoint: "mongodb+srv://h1/"},
	} {
		if got := target(c); got == base {
			t.Errorf("%+v shares %s", c, base)
		}
	}
	for _, bad := range []string{"", "h1:27017", "mongodb://", "http://h1"} {
		if _, err := routedTarget(routing.Credentials{Endpoint: bad}, "app"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
