package testsvc

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// outcome is what a helper did to the test it was given: a real testing.T
// that skips or fails ends the test that asked, so the helpers run here on
// a recorder that ends only its own goroutine.
type outcome struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (o *outcome) Helper() {}

func (o *outcome) Fatal(args ...any) { o.failed, o.msg = true, fmt.Sprint(args...); runtime.Goexit() }

func (o *outcome) Fatalf(f string, args ...any) { o.Fatal(fmt.Sprintf(f, args...)) }

func (o *outcome) Skip(args ...any) { o.skipped, o.msg = true, fmt.Sprint(args...); runtime.Goexit() }

func try(f func(testing.TB)) *outcome {
	o := &outcome{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(o)
	}()
	<-done
	return o
}

func listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// TestLocate pins what every service finder returns and checks: the
// environment's value as it is, the server at it (a bare address through
// its scheme, a list at its first seed, trimmed) answering.
func TestLocate(t *testing.T) {
	a, b := listen(t), listen(t)
	t.Setenv("TENANTWIRE_PG_URL", "postgres://postgres@"+a+"/db?sslmode=disable")
	t.Setenv("TENANTWIRE_REDIS_ADDR", a)
	t.Setenv("TENANTWIRE_KAFKA_BROKERS", " "+b+" ,127.0.0.1:1")
	t.Setenv(RedisClusterEnv, " "+a+" , "+b)
	t.Setenv("TENANTWIRE_KAFKA_GATED_LISTENER", b)
	t.Setenv("TENANTWIRE_KAFKA_GATED_ADVERTISED", "elsewhere:1")
	if got := PostgresURL(t); got != "postgres://postgres@"+a+"/db?sslmode=disable" {
		t.Errorf("PostgresURL = %q", got)
	}
	if got := RedisAddr(t); got != a {
		t.Errorf("RedisAddr = %q, want %q", got, a)
	}
	if got := KafkaBrokers(t); got != " "+b+" ,127.0.0.1:1" {
		t.Errorf("KafkaBrokers = %q, want the list as set", got)
	}
	if got := RedisCluster(t); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("RedisCluster = %q, want [%s %s]", got, a, b)
	}
	if l, adv := KafkaGatedListener(t); l != b || adv != "elsewhere:1" {
		t.Errorf("KafkaGatedListener = %q, %q", l, adv)
	}
}

// TestUnreachableFailsUnderCI pins the fail-closed rule every finder and
// every private server shares: a missing service skips loudly, and fails
// where services are required.
func TestUnreachableFailsUnderCI(t *testing.T) {
	down := FreePort(t) // closed again: nothing listens there
	t.Setenv("TENANTWIRE_REDIS_ADDR", "127.0.0.1:"+down)
	t.Setenv("TENANTWIRE_KAFKA_BROKERS", "127.0.0.1:"+down+","+listen(t))
	for _, find := range []func(testing.TB){
		func(t testing.TB) { RedisAddr(t) },
		func(t testing.TB) { KafkaBrokers(t) },
	} {
		t.Setenv("CI", "")
		t.Setenv("TENANTWIRE_REQUIRE_SERVICES", "")
		if o := try(find); !o.skipped || o.failed || !strings.HasPrefix(o.msg, "SKIPPED: ") || !strings.Contains(o.msg, "127.0.0.1:"+down) {
			t.Errorf("without CI: skipped=%v failed=%v %q, want a loud skip naming the address", o.skipped, o.failed, o.msg)
		}
		t.Setenv("TENANTWIRE_REQUIRE_SERVICES", "1")
		if o := try(find); !o.failed || o.skipped {
			t.Errorf("services required: failed=%v skipped=%v %q, want a failure", o.failed, o.skipped, o.msg)
		}
	}
}

func TestAwaitListening(t *testing.T) {
	if err := awaitListening(listen(t), time.Second); err != nil {
		t.Errorf("a listening address: %v", err)
	}
	start := time.Now()
	if err := awaitListening("127.0.0.1:"+FreePort(t), 200*time.Millisecond); err == nil {
		t.Error("nothing listens, yet awaitListening returned nil")
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("gave up after %s, before its deadline", d)
	}
}
