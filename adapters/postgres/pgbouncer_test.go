package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Behind a transaction pooler the module's guarantees may assume nothing
// of a server session beyond one transaction. The conformance kit and the
// boundary probes run through the test PgBouncer too
// (TestConformanceThroughPgBouncer, TestRouteBoundariesThroughPgBouncer);
// these tests cover what a pooler changes.

var loginSecret = []byte(strings.Repeat("p", 32))

// TestPooledWiring: behind a transaction pooler a dynamic read on a plain
// client needs Login (its connections could not serve one tenant each),
// and a pool mode that binds in a second round trip what its first parsed
// is refused; the routed tier and Login wire.
func TestPooledWiring(t *testing.T) {
	pooled := postgres.BehindTransactionPooler()
	dyn := func(dc postgres.DynamicReadConfig) postgres.Option { return postgres.DynamicReadRoute("dyn", dc) }
	confined := postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true}
	tenancytest.RequireRefused(t, postgres.CodeDynamicReadPooled,
		postgres.Module("pg", postgres.Connect(nowhere), pooled, dyn(confined)))
	// The same read without the pooler wires: the refusal is the pooler's.
	tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere), dyn(confined)))
	login := confined
	login.Login = &postgres.DynamicLogin{Secret: loginSecret}
	tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere), pooled, dyn(login)))
	tenancytest.RequireWires(t, postgres.Module("pg", postgres.Routed(resolveNowhere, postgres.RoutedConfig{}), pooled, dyn(postgres.DynamicReadConfig{})))

	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		postgres.Module("pg", postgres.Connect(nowhere+"&default_query_exec_mode=describe_exec"), pooled))
	tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere+"&default_query_exec_mode=describe_exec")))
	for _, mode := range []string{"cache_statement", "cache_describe", "exec", "simple_protocol"} {
		tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere+"&default_query_exec_mode="+mode), pooled))
	}
	cfg, err := pgxpool.ParseConfig(nowhere)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	p, err := pgxpool.NewWithConfig(context.Background(), cfg) // does not connect
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Use(p), pooled))
}

// roundRobinPgBouncer is a private PgBouncer that hands each transaction
// the server session idle longest (server_round_robin): consecutive
// transactions of one connection run in different sessions whenever
// there are two, as they do on a busy pooler, so what assumes one session
// per connection fails here instead of passing by luck.
func roundRobinPgBouncer(t *testing.T) via {
	u := testsvc.StartPgBouncer(t, "", "server_round_robin = 1", "default_pool_size = 4")
	return via{url: func(testing.TB) string { return u }, opts: []postgres.Option{postgres.BehindTransactionPooler()}, login: true}
}

// TestDynamicReadThroughPoolerReleasesLocks: compiled text that takes a
// session advisory lock (which outlives a rollback and conflicts
// database-wide, framework keys included) leaves it nowhere, through a
// pooler that runs the read's next message in another server session:
// the release goes in the message that ends the read's transaction, on
// the success path and when the text fails. For a plain client's Login
// read and a routed tenant's read.
func TestDynamicReadThroughPoolerReleasesLocks(t *testing.T) {
	v := roundRobinPgBouncer(t)
	su := superuser(t)
	run, err := strconv.ParseInt(runID, 16, 64) // 24 random bits
	if err != nil {
		t.Fatal(err)
	}
	key := int64(1)<<30 + run<<4 + int64(seq.Add(1)%16)

	check := func(t *testing.T, dyn *postgres.DynamicRead, ctx context.Context, db string) {
		t.Helper()
		warmSessions(t, dyn, ctx)
		held := func() int {
			var n int
			if err := su.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
				WHERE l.locktype = 'advisory' AND l.classid = 0 AND l.objid::bigint = $1 AND d.datname = $2`, key, db).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, text := range []string{
			fmt.Sprintf("SELECT pg_advisory_lock(%d)", key),
			fmt.Sprintf("SELECT pg_advisory_lock(%d), 1/0", key), // the transaction fails
		} {
			err := dyn.Query(ctx, text, nil, func(r pgx.Rows) error {
				for r.Next() {
				}
				return r.Err()
			})
			if strings.Contains(text, "1/0") != (err != nil) {
				t.Fatalf("%s: %v", text, err)
			}
			if n := held(); n != 0 {
				t.Fatalf("%s: the lock outlived the read in %d server session(s)", text, n)
			}
		}
	}

	t.Run("login", func(t *testing.T) {
		prefix := "tw" + unique() + "_"
		var dyn *postgres.DynamicRead
		c := start(t, postgres.Module("pg", append(v.dsn(t), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
			postgres.CounterRoute("k", postgres.CounterConfig{Table: naming.PerTenant("k")}),
			postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true,
				Login: &postgres.DynamicLogin{Secret: loginSecret, MaxClients: 2}}))...), named("dyn", &dyn))
		provision(t, c, tenancytest.TenantA)
		t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
		check(t, dyn, ctxA, "tenantwire_test")
	})
	t.Run("routed", func(t *testing.T) {
		var dyn *postgres.DynamicRead
		resolve := twoDatabasesVia(t, v)
		c := start(t, postgres.Module("pg", append([]postgres.Option{postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 2}})}, append(v.opts,
			postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{}))...)...), named("dyn", &dyn))
		provision(t, c, tenancytest.TenantA)
		creds, err := resolve(ctxA, tenancytest.TenantA)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := pgx.ParseConfig(creds.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		check(t, dyn, ctxA, cfg.Database)
	})
}

// warmSessions opens two server sessions for ctx's tenant's reads (two
// reads at once) and checks that two reads in a row then run in
// different ones: the pooler moves a connection's transactions.
func warmSessions(t *testing.T, dyn *postgres.DynamicRead, ctx context.Context) {
	t.Helper()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := dyn.Query(ctx, "SELECT pg_sleep(0.2)", nil, func(r pgx.Rows) error { return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	pid := func() int32 {
		var p int32
		if err := dyn.Query(ctx, "SELECT pg_backend_pid()", nil, func(r pgx.Rows) error {
			for r.Next() {
				if err := r.Scan(&p); err != nil {
					return err
				}
			}
			return r.Err()
		}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if a, b := pid(), pid(); a == b {
		t.Fatalf("two reads ran in one server session (%d): the pooler does not move transactions, and the test would prove nothing", a)
	}
}

// TestStatementsThroughPoolerMovingSessions: every statement of a plain
// and a routed module runs wherever the pooler sends it. The pooler moves
// each transaction to another server session, so a statement prepared by
// name in one (pgx's default mode) would be missing, or already there, in
// the next.
func TestStatementsThroughPoolerMovingSessions(t *testing.T) {
	v := roundRobinPgBouncer(t)
	exercise := func(t *testing.T, d *postgres.Documents[item]) {
		t.Helper()
		for i := range 6 {
			id := fmt.Sprint("d", i)
			if _, err := d.Create(ctxA, id, item{N: i}); err != nil {
				t.Fatal(err)
			}
			if got, err := d.Get(ctxA, id); err != nil || got.Value.N != i {
				t.Fatalf("get %s: %+v %v", id, got, err)
			}
		}
	}
	t.Run("plain", func(t *testing.T) {
		var d *postgres.Documents[item]
		table := naming.Shared("mv_" + unique())
		c := start(t, postgres.Module("pg", append(v.dsn(t), postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: table, Write: table}))...), &d)
		provision(t, c, tenancytest.TenantA)
		movingSessions(t, v.url(t))
		exercise(t, d)
	})
	t.Run("routed", func(t *testing.T) {
		var d *postgres.Documents[item]
		resolve := twoDatabasesVia(t, v)
		c := start(t, postgres.Module("pg", append([]postgres.Option{postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 2}}),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")})}, v.opts...)...), &d)
		provision(t, c, tenancytest.TenantA)
		creds, err := resolve(ctxA, tenancytest.TenantA)
		if err != nil {
			t.Fatal(err)
		}
		movingSessions(t, creds.Endpoint)
		exercise(t, d)
	})
}

// movingSessions opens two server sessions behind the pooler at dsn (two
// statements at once) and checks that two statements in a row on one
// connection then run in different ones.
func movingSessions(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	p, err := pgxpool.New(ctx, dsn+"&pool_max_conns=2&default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := p.Exec(ctx, "SELECT pg_sleep(0.2)"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var a, b int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&a); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&b); err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two statements ran in one server session (%d): the pooler does not move them, and the test would prove nothing", a)
	}
}

// TestDynamicLoginThroughPoolerWithForcedUser: a pooler that logs in to
// PostgreSQL as one user whoever connects (user= in its database entry,
// auth_type = any)
// would run a Login read in a session that is not the tenant's role, from
// which compiled text could reset the role to that user. The read checks
// its session user first and is refused with postgres_dynamic_read_pooled
// before the text runs.
func TestDynamicLoginThroughPoolerWithForcedUser(t *testing.T) {
	pg, err := pgx.ParseConfig(testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u := testsvc.StartPgBouncer(t, fmt.Sprintf("%s = host=%s port=%d user=%s", pg.Database, pg.Host, pg.Port, pg.User), "auth_type = any")
	prefix := "tw" + unique() + "_"
	var dyn *postgres.DynamicRead
	c := start(t, postgres.Module("pg", postgres.Connect(u), postgres.BehindTransactionPooler(), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.CounterRoute("k", postgres.CounterConfig{Table: naming.PerTenant("k")}),
		postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true,
			Login: &postgres.DynamicLogin{Secret: loginSecret, MaxClients: 2}})), named("dyn", &dyn))
	provision(t, c, tenancytest.TenantA)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	ran := false
	err = dyn.Query(ctxA, "SELECT session_user::text", nil, func(r pgx.Rows) error {
		ran = true
		for r.Next() {
		}
		return r.Err()
	})
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != postgres.CodeDynamicReadPooled || ran {
		t.Fatalf("a Login read in the pooler's own login: ran %v, err %v", ran, err)
	}
	t.Log(err)
}

// TestOwnershipGateThroughPgBouncer: behind a transaction pooler a
// client's gates cache nothing, so another replica's delete is never
// answered from a cache. A listener there would hear its own heartbeats
// whenever the pooler gave its LISTEN session back to it, take itself for
// in step, and miss the notices sent while others held that session.
func TestOwnershipGateThroughPgBouncer(t *testing.T) {
	run := unique()
	prefix, table := "tw"+run+"_", "pg_"+run
	one := newReplica(t, testsvc.PostgresURL(t), prefix, table)
	two := newReplica(t, testsvc.PgBouncerURL(t)+"&default_query_exec_mode=cache_describe", prefix, table, postgres.BehindTransactionPooler())
	provision(t, one.c, tenancytest.TenantA, tenancytest.TenantB)
	t.Cleanup(func() { teardown(t, one.c, tenancytest.TenantA, tenancytest.TenantB) })
	if _, err := one.docs.Create(ctxA, "m1", item{}); err != nil {
		t.Fatal(err)
	}
	// Longer than a listener needs to hear its first heartbeat.
	time.Sleep(1500 * time.Millisecond)
	for range 3 {
		before := two.lookups.Load()
		if err := two.gate.Check(ctxA, "m1"); err != nil {
			t.Fatalf("the owner was denied: %v", err)
		}
		if two.lookups.Load() == before {
			t.Fatal("a gate behind a transaction pooler answered from its cache")
		}
	}
	if err := one.docs.Delete(ctxA, "m1"); err != nil {
		t.Fatal(err)
	}
	if err := two.gate.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Fatalf("after another replica's delete the gate allowed the old owner: %v", err)
	}
}
