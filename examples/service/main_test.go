package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestTenancyMatrix fails, with a diff naming the route, when a change
// alters any route's tier, origin, floor or verdict. It needs no server:
// the dry run opens no connection. After an intended change:
//
//	go test ./examples/service -run TestTenancyMatrix -tenancy.update
func TestTenancyMatrix(t *testing.T) {
	tenancytest.RequireMatrix(t, "testdata/tenancy.golden",
		wiring("postgres://nobody@127.0.0.1:1/none?sslmode=disable", "127.0.0.1:1", "svc", migrate.NewMemoryRegistry()))
}

func TestService(t *testing.T) {
	t.Setenv("TENANTWIRE_PG_URL", testsvc.PostgresURL(t))
	t.Setenv("TENANTWIRE_REDIS_ADDR", testsvc.RedisAddr(t))
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"orders  orders  document  namespace",
		"acme creates order o-1       -> 201",
		"acme reads o-1               -> 200 anvil x3 (view 1)",
		"globex reads o-1             -> 404 not found (view 1)",
		"globex reads o-1             -> 200 rocket x1 (view 2)",
		"acme reads o-1 again         -> 200 anvil x3 (view 2)",
		"GET /readyz -> 200",
		`tenantwire_route_duration_seconds_count{backend="postgres",kind="document",module="orders"`,
		"PUT /orders/{id}     server",
		"postgres orders      client",
		"order created",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
