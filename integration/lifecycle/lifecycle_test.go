// Package lifecycle_test runs a tenant's life across every backend of one
// app at once, on the real servers: provision, suspend, resume, offboard.
package lifecycle_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type order struct{ Item string }

func unique() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type routes struct {
	fx.In
	Tenants  *modules.Tenants
	Orders   *postgres.Documents[order]
	Events   *kafka.Producer `name:"events"`
	Sessions *redis.Cache    `name:"sessions"`
	Carts    *memory.Cache
	People   *neo4j.Graph `name:"people"`
}

// TestTenantLifeAcrossBackends: one call provisions a tenant in every
// module (PostgreSQL schema, Kafka topic), with a line per module; a
// suspension refuses every route of every module at once with
// tenant_suspended, and only that tenant's; resuming serves it again;
// offboarding removes its PostgreSQL schema, Kafka topic, Redis keys,
// Neo4j nodes and relationships and memory records (read on the servers
// directly) and leaves it suspended, the other tenant untouched.
func TestTenantLifeAcrossBackends(t *testing.T) {
	run := unique()
	pgURL, broker, redisAddr := testsvc.PostgresURL(t), strings.Split(testsvc.KafkaBrokers(t), ",")[0], testsvc.RedisAddr(t)
	n4 := testsvc.Neo4j(t)
	n4auth := drv.NoAuth()
	if n4.User != "" {
		n4auth = drv.BasicAuth(n4.User, n4.Password, "")
	}
	prefix, topicPrefix := "tl"+run+"_", "tl-"+run+"-events."
	var r routes
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		postgres.Module("pg", postgres.Connect(pgURL), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
			postgres.Document[order]("orders", postgres.DocumentConfig{Read: naming.PerTenant("orders")})),
		kafka.Module("bus", kafka.Brokers(broker), modules.AllowTeardown(),
			kafka.ProducerRoute("events", kafka.ProducerConfig{Topic: naming.PerTenant(topicPrefix)})),
		redis.Module("cache", redis.Connect(&goredis.UniversalOptions{Addrs: []string{redisAddr}}), modules.AllowTeardown(),
			redis.CacheRoute("sessions", redis.RouteConfig{TenantAware: true})),
		memory.Module("mem", modules.AllowTeardown(), memory.CacheRoute("carts", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("carts")})),
		neo4j.Module("graph", neo4j.Connect(n4.URI, n4auth), modules.AllowTeardown(),
			neo4j.GraphRoute("people", neo4j.RouteConfig{TenantAware: true})),
		fx.Populate(&r))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	label := "Lifecycle" + run
	t.Cleanup(func() {
		for _, id := range []tenancy.ID{a, b} {
			r.Tenants.Resume(id)
			_, _ = r.Tenants.Offboard(context.Background(), id)
		}
	})

	for _, id := range []tenancy.ID{a, b} {
		rep, err := r.Tenants.Provision(ctx, id)
		if err != nil {
			t.Fatalf("provision %s: %v", id, err)
		}
		var mods []string
		for _, l := range rep {
			mods = append(mods, l.Module+"/"+l.Backend)
		}
		if strings.Join(mods, " ") != "bus/kafka cache/redis graph/neo4j mem/memory pg/postgres" {
			t.Fatalf("report lines %v, want one per module holding tenant state", mods)
		}
	}
	n := 0
	calls := func(id tenancy.ID) map[string]error {
		c := tenancy.WithTenant(ctx, id)
		n++
		_, err := r.Orders.Create(c, fmt.Sprintf("o-%d", n), order{"anvil"})
		out := map[string]error{"postgres": err}
		out["kafka"] = r.Events.Produce(c, kafka.Message{Value: []byte("e")})
		out["redis"] = r.Sessions.Set(c, "s", []byte("v"), time.Minute)
		out["memory"] = r.Carts.Set(c, "c", []byte("v"), time.Minute)
		err = r.People.Write(c, func(ctx context.Context, tx neo4j.Ops) error {
			p, err := tx.CreateNode(ctx, []string{label}, nil)
			if err != nil {
				return err
			}
			q, err := tx.CreateNode(ctx, []string{label}, nil)
			if err != nil {
				return err
			}
			_, err = tx.CreateRelationship(ctx, p.ID, q.ID, "KNOWS", nil)
			return err
		})
		out["neo4j"] = err
		return out
	}
	for backend, err := range calls(a) {
		if err != nil {
			t.Fatalf("active tenant on %s: %v", backend, err)
		}
	}

	r.Tenants.Suspend(a)
	for backend, err := range calls(a) {
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeTenantSuspended || te.Backend == "" || te.Module == "" || te.Route == "" {
			t.Errorf("suspended tenant on %s: %v", backend, err)
		}
	}
	for backend, err := range calls(b) {
		if err != nil {
			t.Errorf("another tenant on %s while A is suspended: %v", backend, err)
		}
	}
	r.Tenants.Resume(a)
	for backend, err := range calls(a) {
		if err != nil {
			t.Errorf("resumed tenant on %s: %v", backend, err)
		}
	}

	rep, err := r.Tenants.Offboard(ctx, a)
	if err != nil {
		t.Fatalf("offboard: %v (%+v)", err, rep)
	}
	if !r.Tenants.Suspended(a) {
		t.Error("an offboarded tenant is not suspended")
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schemas []string
	rows, _ := conn.Query(ctx, "SELECT nspname FROM pg_namespace WHERE nspname LIKE $1 ORDER BY 1", prefix+"%")
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		schemas = append(schemas, s)
	}
	if len(schemas) != 1 || schemas[0] != postgres.SchemaName(prefix, b) {
		t.Errorf("schemas after offboarding A: %v, want only B's", schemas)
	}
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	md, err := (&kafkago.Client{Addr: kafkago.TCP(broker), Transport: tr}).Metadata(ctx, &kafkago.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, tp := range md.Topics {
		if strings.HasPrefix(tp.Name, topicPrefix) {
			topics = append(topics, tp.Name)
		}
	}
	if len(topics) != 1 || topics[0] != topicPrefix+b.Hex() {
		t.Errorf("topics after offboarding A: %v, want only B's", topics)
	}

	rc := goredis.NewClient(&goredis.Options{Addr: redisAddr})
	defer rc.Close()
	for id, want := range map[tenancy.ID]int{a: 0, b: 1} {
		var keys []string
		it := rc.Scan(ctx, 0, "tw:*"+id.Hex()+"*", 1000).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if len(keys) != want {
			t.Errorf("redis keys of %s after offboarding A: %v, want %d", id, keys, want)
		}
	}
	nd, err := drv.NewDriverWithContext(n4.URI, n4auth)
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close(ctx)
	t.Cleanup(func() {
		_, _ = drv.ExecuteQuery(context.Background(), nd, "MATCH (n:`"+label+"`) DETACH DELETE n", nil, drv.EagerResultTransformer)
	})
	for id, want := range map[tenancy.ID]int64{a: 0, b: 3} {
		res, err := drv.ExecuteQuery(ctx, nd, "MATCH (n:`"+label+"`) WHERE n.tenant_id = $t OPTIONAL MATCH (n)-[x:KNOWS]->() "+
			"RETURN count(DISTINCT n) + count(x)", map[string]any{"t": id.String()}, drv.EagerResultTransformer)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Records[0].Values[0].(int64); got != want {
			t.Errorf("neo4j nodes and relationships of %s after offboarding A: %d, want %d", id, got, want)
		}
	}
	r.Tenants.Resume(a) // to read the memory module through its route
	if _, ok, err := r.Carts.Get(tenancy.WithTenant(ctx, a), "c"); err != nil || ok {
		t.Errorf("A's memory record after offboarding: %v %v", ok, err)
	}
	if _, ok, err := r.Carts.Get(tenancy.WithTenant(ctx, b), "c"); err != nil || !ok {
		t.Errorf("B's memory record after offboarding A: %v %v", ok, err)
	}
}
