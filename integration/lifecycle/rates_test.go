package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	goredis "github.com/redis/go-redis/v9"
	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/lifebench"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// startApp starts one module under modules.Lifecycle and fills out.
func startApp(t *testing.T, module fx.Option, out any) {
	t.Helper()
	app := fx.New(fx.NopLogger, modules.Lifecycle(), module, fx.Populate(out))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
}

// present counts the ids whose hex found says is there.
func present(ids []tenancy.ID, found func(hex string) bool) int {
	n := 0
	for _, id := range ids {
		if found(id.Hex()) {
			n++
		}
	}
	return n
}

// TestRatioLifecycleRates: under `make bench` only, the whole life of many
// tenants (lifebench.Measure: provisioning cut off halfway and rerun, a
// first write each, suspend and resume all, offboard, an offboarding
// rerun, nothing left on the server) through modules.Tenants, one backend
// at a time on the real servers: 10,000 tenants on PostgreSQL (a schema
// each), Redis (tagged), Neo4j (tagged) and memory; 1,000 on Kafka (a
// topic each on the one local broker other suites share: 10,000 topics
// there is not practical). MongoDB: TestRatioLifecycleRatesMongo. TENANTWIRE_LIFECYCLE_TENANTS sets
// one count for all. The figures are docs/lifecycle.md's runbook table.
func TestRatioLifecycleRates(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	run := unique()
	t.Run("postgres-namespace", func(t *testing.T) {
		pgURL := testsvc.PostgresURL(t)
		prefix := "lr" + run + "_"
		var r struct {
			fx.In
			Tenants *modules.Tenants
			Orders  *postgres.Documents[order]
		}
		startApp(t, postgres.Module("pg", postgres.Connect(pgURL), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
			postgres.Document[order]("orders", postgres.DocumentConfig{Read: naming.PerTenant("orders")})), &r)
		lifebench.Measure(t, lifebench.Backend{Name: "postgres-namespace", Tenants: r.Tenants,
			Write: func(ctx context.Context, key string) error {
				_, err := r.Orders.Create(ctx, key, order{"anvil"})
				return err
			},
			Left: func(ctx context.Context, ids []tenancy.ID) (int, error) {
				conn, err := pgx.Connect(ctx, pgURL)
				if err != nil {
					return 0, err
				}
				defer conn.Close(ctx)
				var n int
				// Schemas and roles both carry the prefix.
				err = conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1) + (SELECT count(*) FROM pg_roles WHERE rolname LIKE $1)", prefix+"%").Scan(&n)
				return n, err
			}}, lifebench.Tenants(t, 10_000))
	})
	t.Run("redis-tagged", func(t *testing.T) {
		addr := testsvc.RedisAddr(t)
		var r struct {
			fx.In
			Tenants  *modules.Tenants
			Sessions *redis.Cache `name:"sessions"`
		}
		startApp(t, redis.Module("cache", redis.Connect(&goredis.UniversalOptions{Addrs: []string{addr}}), modules.AllowTeardown(),
			redis.CacheRoute("sessions", redis.RouteConfig{TenantAware: true})), &r)
		lifebench.Measure(t, lifebench.Backend{Name: "redis-tagged", Tenants: r.Tenants,
			Write: func(ctx context.Context, key string) error { return r.Sessions.Set(ctx, key, []byte("v"), time.Hour) },
			Left: func(ctx context.Context, ids []tenancy.ID) (int, error) {
				rc := goredis.NewClient(&goredis.Options{Addr: addr})
				defer rc.Close()
				keys := map[string]bool{}
				it := rc.Scan(ctx, 0, "tw:*", 1000).Iterator()
				for it.Next(ctx) {
					keys[it.Val()] = true
				}
				if err := it.Err(); err != nil {
					return 0, err
				}
				return present(ids, func(hex string) bool {
					for k := range keys {
						if strings.Contains(k, hex) {
							return true
						}
					}
					return false
				}), nil
			}}, lifebench.Tenants(t, 10_000))
	})
	t.Run("neo4j-tagged", func(t *testing.T) {
		s := testsvc.Neo4j(t)
		a := drv.NoAuth()
		if s.User != "" {
			a = drv.BasicAuth(s.User, s.Password, "")
		}
		label := "LifeRates" + run
		var r struct {
			fx.In
			Tenants *modules.Tenants
			People  *neo4j.Graph `name:"people"`
		}
		startApp(t, neo4j.Module("graph", neo4j.Connect(s.URI, a), modules.AllowTeardown(),
			neo4j.GraphRoute("people", neo4j.RouteConfig{TenantAware: true})), &r)
		lifebench.Measure(t, lifebench.Backend{Name: "neo4j-tagged", Tenants: r.Tenants,
			Write: func(ctx context.Context, key string) error {
				_, err := r.People.CreateNode(ctx, []string{label}, map[string]any{"name": key})
				return err
			},
			Left: func(ctx context.Context, ids []tenancy.ID) (int, error) {
				d, err := drv.NewDriverWithContext(s.URI, a)
				if err != nil {
					return 0, err
				}
				defer d.Close(ctx)
				res, err := drv.ExecuteQuery(ctx, d, "MATCH (n:`"+label+"`) RETURN count(DISTINCT n.tenant_id)", nil, drv.EagerResultTransformer)
				if err != nil {
					return 0, err
				}
				return int(res.Records[0].Values[0].(int64)), nil
			}}, lifebench.Tenants(t, 10_000))
	})
	t.Run("memory", func(t *testing.T) {
		var r struct {
			fx.In
			Tenants *modules.Tenants
			Carts   *memory.Cache
		}
		startApp(t, memory.Module("mem", modules.AllowTeardown(),
			memory.CacheRoute("carts", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("carts")})), &r)
		lifebench.Measure(t, lifebench.Backend{Name: "memory", Tenants: r.Tenants,
			Write: func(ctx context.Context, key string) error { return r.Carts.Set(ctx, key, []byte("v"), time.Hour) },
			Left: func(ctx context.Context, ids []tenancy.ID) (int, error) {
				// The store is this process's: read it through the route,
				// the tenants resumed for the read and suspended again.
				r.Tenants.ResumeAll(ids)
				defer r.Tenants.SuspendAll(ids)
				n := 0
				for _, id := range ids {
					if _, ok, err := r.Carts.Get(tenancy.WithTenant(ctx, id), "first"); err != nil {
						return 0, err
					} else if ok {
						n++
					}
				}
				return n, nil
			}}, lifebench.Tenants(t, 10_000))
	})
	t.Run("kafka-namespace", func(t *testing.T) {
		broker := strings.Split(testsvc.KafkaBrokers(t), ",")[0]
		topicPrefix := "lr-" + run + "-events."
		var r struct {
			fx.In
			Tenants *modules.Tenants
			Events  *kafka.Producer `name:"events"`
		}
		startApp(t, kafka.Module("bus", kafka.Brokers(broker), modules.AllowTeardown(),
			kafka.ProducerRoute("events", kafka.ProducerConfig{Topic: naming.PerTenant(topicPrefix)})), &r)
		lifebench.Measure(t, lifebench.Backend{Name: "kafka-namespace", Tenants: r.Tenants,
			Write: func(ctx context.Context, key string) error {
				return r.Events.Produce(ctx, kafka.Message{Key: []byte(key), Value: []byte("e")})
			},
			Left: func(ctx context.Context, ids []tenancy.ID) (int, error) {
				tr := &kafkago.Transport{}
				defer tr.CloseIdleConnections()
				// A deletion the controller accepted reaches the brokers'
				// metadata a moment later: wait for it, bounded.
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
					md, err := (&kafkago.Client{Addr: kafkago.TCP(broker), Transport: tr}).Metadata(ctx, &kafkago.MetadataRequest{})
					if err != nil {
						return 0, err
					}
					n := 0
					for _, tp := range md.Topics {
						if strings.HasPrefix(tp.Name, topicPrefix) {
							n++
						}
					}
					if n == 0 || time.Now().After(deadline) {
						return n, nil
					}
				}
			}}, lifebench.Tenants(t, 1_000))
	})
}
