package soak_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// Body is what every record of the soak carries: the tenant that wrote it
// and its sequence number. Every tenant uses the same ids for it
// (doc-<seq>, evt-<seq>, <stream>-<seq>), so a record found under the
// wrong tenant is told apart only by its body.
type Body struct {
	Tenant string `json:"tenant"`
	Seq    int    `json:"seq"`
}

// The three streams: "orders" goes through the tenant-global outbox, the
// plain relay and per-tenant topics to a sharded consumer; "audits"
// through the namespace outbox (a schema per tenant), the sharded relay
// and one shared topic to the header-bound consumer; "dedicated" through
// the outbox in each tenant's own database (on one of two servers), a
// sharded relay over both servers and a shared topic to header-bound
// consumers.
const (
	streamOrders    = "orders"
	streamAudits    = "audits"
	streamDedicated = "dedicated"
)

var streams = []string{streamOrders, streamAudits, streamDedicated}

const (
	pgModule     = "soakdb"
	schemaPrefix = "soak_t_"
	ordersOutbox = "orders_outbox"
	auditsOutbox = "audits_outbox"
	sinkTable    = "soak_sink"

	// Connection budgets the sampler holds each process to.
	appPGConns   = 24
	relayPGConns = 12
	redisConns   = 16
	mongoConns   = 16
)

// pgOptions are the PostgreSQL routes both processes declare (the app
// writes the outboxes, the relay process drains them).
func pgOptions(dsn string, extra ...postgres.Option) fx.Option {
	return postgres.Module(pgModule, append([]postgres.Option{postgres.Connect(dsn), postgres.SchemaPrefix(schemaPrefix),
		// namespace: a schema per tenant.
		postgres.Document[Body]("ns_docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}),
		// tagged: one table, the tenant on every row and predicate.
		postgres.Document[Body]("tagged_docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("soak_docs"), Write: naming.Shared("soak_docs")}),
		postgres.OutboxRoute(ordersOutbox, postgres.OutboxConfig{Table: naming.Shared("soak_orders_outbox")}),
		postgres.OutboxRoute(auditsOutbox, postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("audits_outbox")}),
		postgres.InboxRoute("inbox", postgres.InboxConfig{TenantAware: true, Table: naming.Shared("soak_inbox")}),
	}, extra...)...)
}

// kafkaOptions are the Kafka routes: producers for the relay process,
// consumers for the app. brokers is a comma-separated list.
func kafkaOptions(brokers string, extra ...kafka.Option) fx.Option {
	return kafka.Module("soakkafka", append([]kafka.Option{kafka.Brokers(strings.Split(brokers, ",")...)}, extra...)...)
}

// ordersTopics is the prefix of the orders topics, one per tenant.
func ordersTopics(prefix string) string { return prefix + "orders." }

// auditsTopic is one topic for every tenant, its auditMembers partitions
// shared by auditMembers consumers of one group: a single header-bound
// reader handles records one at a time and would trail the writers.
func auditsTopic(prefix string) string { return prefix + "audits" }

const auditMembers = 4

// dedicatedTopic is the dedicated stream's shared topic, read by
// dedicatedMembers header-bound consumers of one group.
func dedicatedTopic(prefix string) string { return prefix + "dedicated" }

const dedicatedMembers = 2

// app is the service under soak: the HTTP boundary writing documents and
// outbox rows, and the consumers writing the inbox, Redis and MongoDB.
type app struct {
	fx    *fx.App
	deps  appDeps
	sinks *sinks
}

type appDeps struct {
	fx.In
	Client *postgres.Client          `name:"soakdb"`
	NS     *postgres.Documents[Body] `name:"ns_docs"`
	Tagged *postgres.Documents[Body] `name:"tagged_docs"`
	Orders *postgres.Outbox          `name:"orders_outbox"`
	Audits *postgres.Outbox          `name:"audits_outbox"`
	Inbox  *postgres.Inbox           `name:"inbox"`
	// The dedicated leg: each tenant's own database, on one of two servers.
	DedClient *postgres.Client          `name:"soakded"`
	Ded       *postgres.Documents[Body] `name:"ded_docs"`
	DedOut    *postgres.Outbox          `name:"ded_outbox"`
	Counter   *redis.Counter            `name:"delivered"`
	Cache     *redis.Cache              `name:"latest"`
	Mongo     *mongo.Documents[Body]
	Kafka     *migrate.Runner    `name:"soakkafka"`
	MongoP    *mongo.Provisioner `name:"soakmongo"`
	Server    *tenanthttp.Server
}

type env struct {
	pgDSN     string
	redisAddr string
	broker    string // comma-separated
	relayDSN  string
	mongoURI  string
	prefix    string // topic and group prefix of this run
	ded       placement
	tenants   []tenancy.ID
}

func newApp(e env, s *sinks, onConsumerErr func(error)) (*app, error) {
	a := &app{sinks: s}
	assigned := func(context.Context) ([]tenancy.ID, error) { return e.tenants, nil }
	a.fx = fx.New(fx.NopLogger,
		pgOptions(e.pgDSN),
		dedOptions(e.ded, appDedName),
		redis.Module("soakredis",
			redis.Connect(&goredis.UniversalOptions{Addrs: []string{e.redisAddr}, PoolSize: redisConns,
				DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second}),
			redis.CounterRoute("delivered", redis.RouteConfig{TenantAware: true}),
			redis.CacheRoute("latest", redis.RouteConfig{Namespace: naming.PerTenant("soak")}),
		),
		mongo.Module("soakmongo", mongo.Connect(e.mongoURI), mongo.Database("soak"),
			mongo.Document[Body]("records", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("records")})),
		kafkaOptions(e.broker, append([]kafka.Option{
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: e.prefix + "orders", WorkerConfig: shards.WorkerConfig{Tenants: assigned, OnError: onConsumerErr, Backoff: 100 * time.Millisecond},
				Handle: s.handle(streamOrders), MaxWait: time.Second, Topic: naming.PerTenant(ordersTopics(e.prefix))}),
		}, sharedConsumers(e.prefix, s, onConsumerErr)...)...),
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0",
			TrustedProxy: true}), // the load generator is the proxy: it sets the header itself
		tenanthttp.RouteWith("POST /orders/{seq}", tenanthttp.Tenant, func(d appDeps) http.Handler { return writeHandler(d) }),
		fx.Populate(&a.deps),
		fx.Invoke(func(d appDeps) { s.deps = d }),
	)
	return a, a.fx.Err()
}

// sharedConsumers are the header-bound members of the audits and the
// dedicated groups.
func sharedConsumers(prefix string, s *sinks, onErr func(error)) []kafka.Option {
	var out []kafka.Option
	for _, g := range []struct {
		stream, topic string
		members       int
	}{{streamAudits, auditsTopic(prefix), auditMembers}, {streamDedicated, dedicatedTopic(prefix), dedicatedMembers}} {
		for i := range g.members {
			out = append(out, kafka.Consumer(fmt.Sprintf("%s-in-%d", g.stream, i), kafka.ConsumerConfig{Group: prefix + g.stream, TenantFromHeaders: true,
				Handle: s.handle(g.stream), DeadLetter: s.deadLetter, WorkerConfig: shards.WorkerConfig{OnError: onErr, Backoff: 100 * time.Millisecond}, MaxWait: time.Second,
				Topic: naming.Shared(g.topic), Partitions: g.members, ReplicationFactor: -1}))
		}
	}
	return out
}

// writeHandler is the tenant route: the request's tenant (bound by the
// boundary) writes doc-<seq> to the namespace and the tagged document
// routes and its two outbox rows in one transaction, then doc-<seq> and
// its outbox row in its own database (the dedicated leg). It is
// idempotent, so the load generator retries a failed request until it is
// acknowledged: a retry of a request whose commit did land finds its rows
// there (unique per tenant) and acknowledges.
func writeHandler(d appDeps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		tenant, err := tenancy.Require(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		seq, err := strconv.Atoi(r.PathValue("seq"))
		if err != nil {
			http.Error(w, "bad seq", http.StatusBadRequest)
			return
		}
		b := Body{Tenant: tenant.String(), Seq: seq}
		body, _ := json.Marshal(b)
		id := "doc-" + strconv.Itoa(seq)
		event := "evt-" + strconv.Itoa(seq)
		msg := func(stream string) outbox.Message {
			return outbox.Message{EventID: event, Topic: stream, Key: []byte(id), Payload: body}
		}
		for _, docs := range []*postgres.Documents[Body]{d.NS, d.Tagged} {
			if _, err := docs.Create(ctx, id, b); err != nil && !errors.Is(err, document.ErrExists) {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		err = inTx(ctx, d.Client, func(tx pgx.Tx) error {
			if err := d.Orders.WriteTx(ctx, tx, msg(streamOrders)); err != nil {
				return err
			}
			return d.Audits.WriteTx(ctx, tx, msg(streamAudits))
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if _, err := d.Ded.Create(ctx, id, b); err != nil && !errors.Is(err, document.ErrExists) {
			http.Error(w, "dedicated: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := inTx(ctx, d.DedClient, func(tx pgx.Tx) error { return d.DedOut.WriteTx(ctx, tx, msg(streamDedicated)) }); err != nil {
			http.Error(w, "dedicated: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// inTx runs f in a transaction on the pool of the tenant bound to ctx; a
// unique violation means a retried request's rows are there already.
func inTx(ctx context.Context, c *postgres.Client, f func(pgx.Tx) error) error {
	pool, release, err := c.Pool(ctx)
	if err != nil {
		return err
	}
	defer release()
	err = pgx.BeginFunc(ctx, pool, f)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "23505" {
		return nil
	}
	return err
}
