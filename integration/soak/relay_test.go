package soak_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The relays run in a process of their own (this test binary, re-run
// with relayChildEnv set), so that the soak can kill them mid-batch the
// way a crash does: SIGKILL, no drain, no Complete.
const relayChildEnv = "TENANTWIRE_SOAK_RELAY_CHILD"

// relayChild runs the relays until SIGTERM (a drained stop) or SIGKILL.
// It prints "delivered" on stdout after each row handed to Kafka and
// "ready" once started; the relays' warnings go to stderr.
func relayChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "relay child:", err)
		return 1
	}
	var ids []tenancy.ID
	for _, s := range strings.Split(os.Getenv("SOAK_TENANTS"), ",") {
		id, err := tenancy.ParseID(s)
		if err != nil {
			return fail(err)
		}
		ids = append(ids, id)
	}
	prefix := os.Getenv("SOAK_PREFIX")
	var prod struct {
		fx.In
		Orders    *kafka.Producer `name:"orders"`
		Audits    *kafka.Producer `name:"audits"`
		Dedicated *kafka.Producer `name:"dedicated"`
	}
	var out sync.Mutex
	// Each produce is reported with how long it took, so that the soak
	// can tell how long a broker fault stalled or failed them.
	to := func(p func() *kafka.Producer) outbox.Destination {
		return outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
			start := time.Now()
			err := p().Deliver(ctx, m)
			took := time.Since(start).Nanoseconds()
			out.Lock()
			if err != nil {
				fmt.Fprintln(os.Stdout, "failed", took)
			} else {
				fmt.Fprintln(os.Stdout, "delivered", took)
			}
			out.Unlock()
			return err
		})
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The sharded relay polls once per tenant: a longer idle wait keeps
	// fifty idle passes from loading the server.
	// tenants, when set, makes the relay sharded.
	rc := func(name string, dest outbox.Destination, idle time.Duration, tenants shards.TenantsFunc) postgres.RelayConfig {
		return postgres.RelayConfig{Name: name, Destination: dest, WorkerConfig: shards.WorkerConfig{Tenants: tenants, MaxBackoff: time.Second, Logger: logger, Backoff: idle}, BatchSize: 50, Idle: idle}
	}
	assigned := func(context.Context) ([]tenancy.ID, error) { return ids, nil }
	app := fx.New(fx.NopLogger,
		kafka.Module("soakkafka", kafka.Brokers(strings.Split(os.Getenv("SOAK_BROKER"), ",")...),
			kafka.TuneWriter(func(w *kafkago.Writer) { w.BatchTimeout = time.Millisecond }),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(ordersTopics(prefix))}),
			kafka.ProducerRoute("audits", kafka.ProducerConfig{Topic: naming.Shared(auditsTopic(prefix)), Partitions: auditMembers, ReplicationFactor: -1}),
			kafka.ProducerRoute("dedicated", kafka.ProducerConfig{Topic: naming.Shared(dedicatedTopic(prefix)), Partitions: dedicatedMembers, ReplicationFactor: -1})),
		pgOptions(os.Getenv("SOAK_PG"),
			postgres.Relay(ordersOutbox, rc("orders-relay", to(func() *kafka.Producer { return prod.Orders }), 50*time.Millisecond, nil)),
			postgres.Relay(auditsOutbox, rc("audits-relay", to(func() *kafka.Producer { return prod.Audits }), 250*time.Millisecond, assigned))),
		// One pass per tenant, each on the tenant's own pool to its own
		// server: a pass of a tenant whose server is down fails alone.
		dedOptions(newPlacement(strings.Split(os.Getenv("SOAK_PG_DED_PORTS"), ","), ids), relayDedName,
			postgres.Relay(dedOutbox, rc("dedicated-relay", to(func() *kafka.Producer { return prod.Dedicated }), 250*time.Millisecond, assigned))),
		fx.Populate(&prod),
	)
	if err := app.Err(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		return fail(err)
	}
	out.Lock()
	fmt.Fprintln(os.Stdout, "ready")
	out.Unlock()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	stop, cancelStop := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelStop()
	if err := app.Stop(stop); err != nil {
		return fail(err)
	}
	return 0
}

// relayProc runs and kills the relay process.
type relayProc struct {
	env       []string
	cmd       *exec.Cmd
	done      chan struct{}
	delivered atomic.Int64 // rows handed to Kafka, over every run
	// onProduce, if set before start, is told of every produce: when it
	// ended, how long it took and whether Kafka acknowledged it.
	onProduce func(end time.Time, took time.Duration, ok bool)
	warnings  atomic.Int64 // failed relay passes (the relays' own warnings)
	mu        sync.Mutex
	lastErr   []string
	ready     chan struct{}
}

func newRelayProc(e env) *relayProc {
	ids := make([]string, len(e.tenants))
	for i, id := range e.tenants {
		ids[i] = id.String()
	}
	return &relayProc{env: append(os.Environ(), relayChildEnv+"=1", "SOAK_TENANTS="+strings.Join(ids, ","),
		"SOAK_PREFIX="+e.prefix, "SOAK_BROKER="+e.broker, "SOAK_PG="+e.relayDSN, "SOAK_PG_DED_PORTS="+strings.Join(e.ded.ports, ","))}
}

func (r *relayProc) start() error {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the soak
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	r.cmd, r.done, r.ready = cmd, make(chan struct{}), make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			word, took, _ := strings.Cut(sc.Text(), " ")
			switch word {
			case "delivered", "failed":
				if word == "delivered" {
					r.delivered.Add(1)
				}
				if r.onProduce != nil {
					ns, _ := strconv.ParseInt(took, 10, 64)
					r.onProduce(time.Now(), time.Duration(ns), word == "delivered")
				}
			case "ready":
				close(r.ready)
			}
		}
	})
	readers.Go(func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "relay pass failed") {
				r.warnings.Add(1)
			}
			r.mu.Lock()
			r.lastErr = append(r.lastErr, line)
			if len(r.lastErr) > 5 {
				r.lastErr = r.lastErr[1:]
			}
			r.mu.Unlock()
		}
	})
	done := r.done
	go func() {
		readers.Wait()
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-r.ready:
		return nil
	case <-done:
		return fmt.Errorf("relay process exited at start: %s", r.tail())
	case <-time.After(60 * time.Second):
		r.kill()
		return fmt.Errorf("relay process not ready after 60s: %s", r.tail())
	}
}

func (r *relayProc) tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lastErr, " | ")
}

// kill is the crash: SIGKILL, whatever batch is in flight.
func (r *relayProc) kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// stop is the orderly shutdown: SIGTERM, the relays finish their batch.
func (r *relayProc) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(40 * time.Second):
		r.kill()
	}
	r.cmd = nil
}
