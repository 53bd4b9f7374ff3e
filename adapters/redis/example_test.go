package redis_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A tagged cache on a Redis Cluster: Connect with the cluster's seed
// addresses builds go-redis's cluster client (re-reading the slot map every
// 2 seconds, so a failover heals within seconds). It needs a cluster
// (TENANTWIRE_REDIS_CLUSTER, host:port,...), so it has no Output line:
// `go test` compiles it and does not run it.
func ExampleConnect_cluster() {
	var sessions *redis.Cache
	app := fx.New(fx.NopLogger,
		redis.Module("cache",
			redis.Connect(&goredis.UniversalOptions{Addrs: strings.Split(os.Getenv("TENANTWIRE_REDIS_CLUSTER"), ",")}),
			modules.RequiredIsolation(tenancy.Tagged),
			redis.CacheRoute("sessions", redis.RouteConfig{TenantAware: true}),
		),
		fx.Invoke(fx.Annotate(func(c *redis.Cache) { sessions = c }, fx.ParamTags(`name:"sessions"`))),
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(ctx) }()

	acme := tenancy.WithTenant(ctx, tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7"))
	// The key, tw:t:<acme hex>:c:sessions:user%7B42%7D, lands on the slot
	// of its full name: the braces are escaped, not a hash tag.
	if err := sessions.Set(acme, "user{42}", []byte("token"), time.Hour); err != nil {
		fmt.Println(err)
		return
	}
	v, _, err := sessions.Get(acme, "user{42}")
	fmt.Println(string(v), err)
}
