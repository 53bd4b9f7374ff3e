// Package soak_test is the end-to-end multi-tenant soak: HTTP → PostgreSQL
// (documents and transactional outbox rows; on the dedicated tier, each
// tenant's own database on one of two servers) → relays → Kafka →
// consumers → inbox → Redis and MongoDB, for fifty tenants that all use
// the same ids, with faults injected on a schedule. `make soak` runs it
// for minutes (TENANTWIRE_SOAK=1, SOAK_DURATION); `make test` runs a few
// seconds of it.
package soak_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancy"
)

func TestMain(m *testing.M) {
	if os.Getenv(relayChildEnv) == "1" {
		os.Exit(relayChild())
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeTemplate()
		os.Exit(code)
	}))
}

// soakConfig is the run's size: the long run under `make soak`, a short
// one in `make test`.
type soakConfig struct {
	duration time.Duration
	tenants  int
	workers  int
	pace     time.Duration
	long     bool
	// cluster: the Kafka legs run on the three-node KRaft cluster of
	// scripts/kafka.sh, not on the in-process broker (kfake).
	cluster bool
}

func config(t *testing.T) soakConfig {
	c := soakConfig{duration: 6 * time.Second, tenants: 50, workers: 8, pace: 100 * time.Millisecond}
	if os.Getenv("TENANTWIRE_SOAK") == "1" {
		c.duration, c.long = 3*time.Minute, true
	}
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_DURATION=%q: %v", v, err)
		}
		c.duration, c.long = d, true
	}
	// A real cluster costs three JVM starts: the long run only, so that
	// the short run keeps to its time in make test.
	c.cluster = c.long
	return c
}

func soakTenants(n int) []tenancy.ID {
	out := make([]tenancy.ID, n)
	for i := range out {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		out[i], _ = tenancy.IDFromBytes([16]byte(b))
	}
	return out
}

type memSample struct {
	goroutines int
	heap       uint64
}

func sampleMem() memSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{runtime.NumGoroutine(), ms.HeapAlloc}
}

func TestSoak(t *testing.T) {
	cfg := config(t)
	// Registered first, so it runs last: after every server, process and
	// app the soak started has stopped, nothing of theirs may be left.
	before := goleak.IgnoreCurrent() // the goroutines of the test binary itself
	t.Cleanup(func() {
		if err := goleak.Find(before); err != nil {
			t.Errorf("goroutines left after shutdown: %v", err)
		} else {
			t.Log("soak goleak after shutdown: no goroutine left")
		}
	})
	phase := time.Now()
	step := func(name string) {
		t.Logf("soak phase %s took %v", name, time.Since(phase).Round(time.Millisecond))
		phase = time.Now()
	}
	// The outages' dial failures and relay warnings are counted, not logged.
	goredis.SetLogger(quiet{})
	prevLog := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { slog.SetDefault(prevLog) })

	// Servers of the soak's own: two PostgreSQL clusters (the second holds
	// half of the dedicated leg's tenant databases).
	pgs := startPrivatePGs(t, 2)
	pg := pgs[0]
	tenants := soakTenants(cfg.tenants)
	ded := newPlacement([]string{pgs[0].port, pgs[1].port}, tenants)
	dedDBs := createDedicatedDatabases(t, ded, pgs, tenants)
	rds := testsvc.StartRedis(t)
	var brk *broker
	var kc *kafkaCluster
	brokers := ""
	if cfg.cluster {
		kc = startKafkaCluster(t)
		brokers = kc.brokers()
	} else {
		brk = startBroker(t)
		brokers = brk.addr
	}
	mongoURI := startFerretDB(t, pg)

	step("servers")
	prefixBytes := make([]byte, 4)
	_, _ = rand.Read(prefixBytes)
	e := env{pgDSN: pg.url("soak-app", appPGConns), relayDSN: pg.url("soak-relay", relayPGConns), redisAddr: rds.Addr,
		broker: brokers, mongoURI: mongoURI, prefix: "soak-" + hex.EncodeToString(prefixBytes) + ".", tenants: tenants, ded: ded}
	serverOf := func(id tenancy.ID) int { s, _ := e.ded.server(id); return s }
	ctx := context.Background()

	s := newSinks()
	var consumerErrs countErr
	a, err := newApp(e, s, consumerErrs.add)
	if err != nil {
		t.Fatal(err)
	}
	if kc != nil {
		// The cluster outlives the run: its topics do not.
		t.Cleanup(func() {
			if err := kc.deleteTopics(e.prefix); err != nil {
				t.Errorf("deleting the run's topics: %v", err)
			}
		})
	}
	if err := provision(ctx, a, pg, e.tenants); err != nil {
		t.Fatal(err)
	}
	if kc != nil {
		// A topic per tenant (orders), and the audits and dedicated topics.
		n := len(e.tenants) + 2
		if err := kc.checkTopics(ctx, e.prefix, n); err != nil {
			t.Fatal(err)
		}
		t.Logf("soak kafka: three-node KRaft cluster %s, %d topics of the run, every partition on %d in-sync replicas, min.insync.replicas %d, produced with acks=all",
			brokers, n, clusterReplicas, clusterMinISR)
	}
	step("provision")
	if err := dedDBs(); err != nil {
		t.Fatal(err)
	}
	step("dedicated databases created")
	if err := provisionDedicated(ctx, a.deps.DedClient, e.ded, pgs, e.tenants); err != nil {
		t.Fatal(err)
	}
	step("provision dedicated")
	relay := newRelayProc(e)
	var clk atomic.Pointer[faultClock] // set once the load exists
	relay.onProduce = func(end time.Time, took time.Duration, ok bool) {
		if c := clk.Load(); c != nil {
			c.produced(end, took, ok)
		}
	}
	if err := relay.start(); err != nil {
		t.Fatal(err)
	}
	defer relay.kill()
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := a.fx.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	step("start")
	stopped := false
	stopApp := func() {
		if stopped {
			return
		}
		stopped = true
		stop, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := a.fx.Stop(stop); err != nil {
			t.Errorf("stopping the app: %v", err)
		}
	}
	defer stopApp()

	l := newLoad("http://"+a.deps.Server.TenantAddr(), e.tenants, cfg.workers, cfg.pace, serverOf)
	memStart := sampleMem()
	begin := time.Now()
	run, stopLoad := context.WithTimeout(ctx, cfg.duration)
	defer stopLoad()
	hard, stopHard := context.WithTimeout(ctx, cfg.duration+2*time.Minute)
	defer stopHard()
	clock := &faultClock{load: l, count: func() counters {
		return counters{l.failed.Load(), consumerErrs.n.Load(), relay.warnings.Load(), int64(s.redelivered()),
			[2]int64{l.failedBy[0].Load(), l.failedBy[1].Load()}, [2]int64{l.ackedBy[0].Load(), l.ackedBy[1].Load()}}
	}}
	s.onDelivered, l.onAck = clock.delivered, clock.acked
	clk.Store(clock)
	smp := newSampler(pgs, rds.Addr)
	sampling, stopSampling := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() { defer close(samplerDone); smp.run(sampling, 250*time.Millisecond) }()
	defer func() { stopSampling(); <-samplerDone }()
	// The heap one minute in, against the end: only a run of two minutes
	// or more says anything about growth.
	var memMinute1 memSample
	minute1 := make(chan struct{})
	go func() {
		defer close(minute1)
		select {
		case <-run.Done():
		case <-time.After(time.Until(begin.Add(time.Minute))):
			memMinute1 = sampleMem()
			dumpGoroutines(t, "minute1")
		}
	}()
	loadDone := make(chan struct{})
	go func() { defer close(loadDone); l.run(run, hard) }()
	if err := clock.run(run, begin, schedule(cfg, pgs, rds, kc, e.prefix, relay)); err != nil {
		t.Error(err)
	}
	<-loadDone
	traffic := time.Since(begin)
	<-minute1
	memTrafficEnd := sampleMem() // under load, as at minute 1
	sent := l.sent()
	total := 0
	for _, n := range sent {
		total += n
	}

	// Drain: every acknowledged record through every sink, or the
	// checker reports what is missing.
	drainStart := time.Now()
	if err := s.waitDelivered(sent, 3*time.Minute); err != nil {
		t.Errorf("drain: %v", err)
	}
	drained := time.Since(drainStart)
	memEnd := sampleMem()
	if cfg.long {
		dumpGoroutines(t, "end")
	}
	stopSampling()
	<-samplerDone

	step("traffic and drain")
	admin, err := pgx.Connect(ctx, pg.plainURL("soak-admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	tallies, err := check(ctx, s, admin, e, pgs, sent)
	if err != nil {
		t.Fatal(err)
	}
	step("check")
	t.Logf("soak run duration=%v tenants=%d workers=%d requests=%d (%.0f/s) records=%d (%.0f/s end to end, drain %v) request_errors=%d consumer_errors=%d relay_warnings=%d",
		traffic.Round(time.Millisecond), cfg.tenants, cfg.workers, total, float64(total)/traffic.Seconds(),
		len(streams)*total, float64(len(streams)*total)/(traffic+drained).Seconds(), drained.Round(time.Millisecond),
		l.failed.Load(), consumerErrs.n.Load(), relay.warnings.Load())
	if v, ok := l.lastErr.Load().(string); ok {
		t.Logf("last request error: %s", v)
	}
	if v, ok := consumerErrs.last.Load().(string); ok {
		t.Logf("last consumer error: %s", v)
	}
	t.Logf("soak process goroutines start=%d end=%d heap_start=%s heap_end=%s (end: drained, before shutdown)", memStart.goroutines, memEnd.goroutines,
		mb(memStart.heap), mb(memEnd.heap))
	// Both samples are taken under load (a backlog in flight at minute 1
	// and at the end of the traffic); growth beyond 20% fails, a smaller
	// heap at the end is reported (it is no leak).
	if memMinute1.heap > 0 {
		growth := (float64(memTrafficEnd.heap) - float64(memMinute1.heap)) / float64(memMinute1.heap)
		t.Logf("soak heap minute_1=%s end_of_traffic=%s change=%+.1f%% (goroutines minute_1=%d end_of_traffic=%d)",
			mb(memMinute1.heap), mb(memTrafficEnd.heap), 100*growth, memMinute1.goroutines, memTrafficEnd.goroutines)
		if cfg.duration >= 2*time.Minute && growth > 0.2 {
			t.Errorf("heap grew %+.1f%% between minute 1 and the end of the traffic (bound: 20%%)", 100*growth)
		}
	}
	lines, over := smp.report()
	for _, line := range lines {
		t.Log(line)
	}
	for _, o := range over {
		t.Error(o)
	}
	for _, line := range clock.report() {
		t.Log(line)
	}
	if f := clock.unrecovered(); len(f) > 0 {
		t.Errorf("faults the pipeline did not recover from: %v", f)
	}
	for _, tl := range tallies {
		t.Log(tl.String())
		if tl.failed() {
			t.Errorf("%s: %v", tl.sink, tl.examples)
		}
	}
	if total == 0 {
		t.Fatal("no request was acknowledged")
	}
	relay.stop()
	step("relay stop")
	stopApp()
	step("app stop")
}

// schedule spreads the faults over the traffic: all of them in the long
// run (on the Kafka cluster), two in the short one. The broker kill, after
// which consumer groups rejoin, comes after minute 1, where the heap is
// sampled. pg-second-restart restarts the second server only: the tenants
// placed on the first one keep being served through it.
func schedule(cfg soakConfig, pgs []*privatePG, rds *testsvc.PrivateRedis, kc *kafkaCluster, prefix string, relay *relayProc) []fault {
	at := func(f float64) time.Duration { return time.Duration(f * float64(cfg.duration)) }
	outage := 3 * time.Second
	if !cfg.long {
		outage = time.Second
	}
	terminate := fault{"pg-terminate-backends", at(0.12), func() (string, error) { return terminateBackends(pgs) }}
	kill := fault{"relay-kill", at(0.54), func() (string, error) { return killRelay(relay, pendingRows(pgs[0])) }}
	if !cfg.long {
		terminate.at, kill.at = at(0.25), at(0.55)
		return []fault{terminate, kill}
	}
	return []fault{
		terminate,
		{"redis-restart", at(0.26), func() (string, error) {
			rds.Kill()
			time.Sleep(outage)
			return fmt.Sprintf("redis-server killed (SIGKILL), restarted after %v", outage), rds.Start()
		}},
		{"kafka-broker-kill", at(0.4), func() (string, error) { return kc.killBroker(prefix, outage) }},
		kill,
		{"kafka-quorum-leader-stop", at(0.6), func() (string, error) { return kc.stopQuorumLeader(prefix, outage) }},
		{"pg-second-restart", at(0.7), func() (string, error) {
			pgs[1].stop(syscall.SIGINT)
			time.Sleep(outage)
			return fmt.Sprintf("second PostgreSQL server (half the dedicated tenant databases) stopped (fast shutdown), started again after %v", outage), pgs[1].start()
		}},
		{"pg-restart", at(0.82), func() (string, error) {
			return "first PostgreSQL server stopped (fast shutdown: every session terminated) and started again", pgs[0].restart()
		}},
	}
}

// dumpGoroutines writes the goroutine profile (grouped stacks) of the
// long run to a file, for reading a growth between minute 1 and the end.
func dumpGoroutines(t *testing.T, label string) {
	f, err := os.CreateTemp("", "tenantwire-soak-goroutines-"+label+"-*.txt")
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("goroutine").WriteTo(f, 1)
	t.Logf("soak goroutine profile at %s: %s", label, f.Name())
}

func mb(b uint64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + "MiB" }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// provision creates every tenant's schemas, collections and topics, and
// the sink table the consumers write in the inbox's transaction.
func provision(ctx context.Context, a *app, pg *privatePG, tenants []tenancy.ID) error {
	d := a.deps
	admin, err := pgx.Connect(ctx, pg.plainURL("soak-admin"))
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+sinkTable+
		" (tenant_id uuid NOT NULL, stream text NOT NULL, seq int NOT NULL, body jsonb NOT NULL)"); err != nil {
		return err
	}
	if err := d.Kafka.ProvisionShared(ctx); err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	for _, id := range tenants {
		if err := d.Client.Provision(ctx, id); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		if err := d.Kafka.Provision(ctx, id); err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		if err := d.MongoP.Provision(ctx, id); err != nil {
			return fmt.Errorf("mongo: %w", err)
		}
	}
	return nil
}
