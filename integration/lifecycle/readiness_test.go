package lifecycle_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

type readyBody struct {
	Ready  bool                  `json:"ready"`
	Checks []modules.ReadyResult `json:"checks"`
}

// readyz starts an app of the HTTP boundary and mods, and reads GET
// /readyz from its operator listener.
func readyz(t *testing.T, mods ...fx.Option) (int, readyBody) {
	t.Helper()
	var srv *tenanthttp.Server
	app := fx.New(append([]fx.Option{fx.NopLogger,
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", HeaderOff: true}),
		fx.Populate(&srv)}, mods...)...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	resp, err := http.Get("http://" + srv.OperatorAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b readyBody
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestReadinessAsksEveryBackend: GET /readyz on the operator listener asks
// each module's own server (PostgreSQL, Redis, Kafka) and answers 200 with
// a line per module; a module whose server does not answer makes it 503
// naming that module, the others still ready.
func TestReadinessAsksEveryBackend(t *testing.T) {
	pgURL, broker, redisAddr := testsvc.PostgresURL(t), strings.Split(testsvc.KafkaBrokers(t), ",")[0], testsvc.RedisAddr(t)
	good := []fx.Option{
		postgres.Module("pg", postgres.Connect(pgURL)),
		redis.Module("cache", redis.Connect(&goredis.UniversalOptions{Addrs: []string{redisAddr}})),
		kafka.Module("bus", kafka.Brokers(broker)),
	}
	status, b := readyz(t, good...)
	if status != http.StatusOK || !b.Ready || len(b.Checks) != 3 {
		t.Fatalf("all servers up: %d %+v", status, b)
	}
	for _, c := range b.Checks {
		if !c.OK {
			t.Errorf("%+v", c)
		}
	}

	status, b = readyz(t, append(good, postgres.Module("gone", postgres.Connect("postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=1")))...)
	if status != http.StatusServiceUnavailable || b.Ready {
		t.Fatalf("a server down: %d %+v", status, b)
	}
	for _, c := range b.Checks {
		if (c.Module == "gone") == c.OK || (c.Module == "gone" && c.Error == "") {
			t.Errorf("%+v", c)
		}
	}

}
