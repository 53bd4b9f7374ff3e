// Package testsvc finds the real servers the adapter tests run against.
// When a server is unreachable a test is skipped, saying so out loud; under
// CI (CI=true) or TENANTWIRE_REQUIRE_SERVICES=1 it fails instead, so a green
// CI can never mean "nothing ran".
package testsvc

import (
	"context"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// PostgresURL is the superuser URL of the test database (trust auth).
func PostgresURL(t testing.TB) string {
	t.Helper()
	return locate(t, "PostgreSQL", "TENANTWIRE_PG_URL", "postgres://postgres@127.0.0.1:5432/tenantwire_test?sslmode=disable", "")
}

// RedisAddr is the address of the test Redis.
func RedisAddr(t testing.TB) string {
	t.Helper()
	return locate(t, "Redis", "TENANTWIRE_REDIS_ADDR", "127.0.0.1:6379", "redis://")
}

// RedisClusterEnv names the Redis Cluster the tests use, as a
// comma-separated host:port list. Packages that run their suite a second
// time on a cluster do so when it is set.
const RedisClusterEnv = "TENANTWIRE_REDIS_CLUSTER"

// RedisCluster is the test Redis Cluster (scripts/redis-cluster.sh: three
// masters and three replicas), as seed addresses for go-redis's cluster
// client; the first must answer.
func RedisCluster(t testing.TB) []string {
	t.Helper()
	addrs := strings.Split(locateList(t, "Redis Cluster", RedisClusterEnv,
		"127.0.0.1:7100,127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104,127.0.0.1:7105", "redis://"), ",")
	for i := range addrs {
		addrs[i] = strings.TrimSpace(addrs[i])
	}
	return addrs
}

// PostgresSecondURL is the superuser URL of the test database on the
// second PostgreSQL server (scripts/services.sh, port 5433), where the
// dedicated tier's tests place some tenants.
func PostgresSecondURL(t testing.TB) string {
	t.Helper()
	return locate(t, "PostgreSQL (second server)", "TENANTWIRE_PG_URL_2", "postgres://postgres@127.0.0.1:5433/tenantwire_test?sslmode=disable", "")
}

// KafkaBrokers is the test Kafka broker (scripts/kafka.sh), as a
// comma-separated bootstrap list; the first address must answer.
func KafkaBrokers(t testing.TB) string {
	t.Helper()
	return locateList(t, "Kafka", "TENANTWIRE_KAFKA_BROKERS", "127.0.0.1:9092", "kafka://")
}

// KafkaSecondBroker is the second test broker (scripts/kafka.sh), a
// cluster of its own beside KafkaBrokers' (one tenant per cluster, as the
// dedicated tier has it), as a comma-separated bootstrap list; the first
// address must answer.
func KafkaSecondBroker(t testing.TB) string {
	t.Helper()
	return locateList(t, "Kafka (second broker)", "TENANTWIRE_KAFKA_BROKERS_2", "127.0.0.1:9492", "kafka://")
}

// The SASL/PLAIN users scripts/kafka.sh configures on its SASL listener.
const (
	KafkaSASLUser   = "tenant-a"
	KafkaSASLSecret = "secret-a"
)

// KafkaSASLBroker is the test broker's SASL_PLAINTEXT listener, where
// KafkaSASLUser logs in with KafkaSASLSecret.
func KafkaSASLBroker(t testing.TB) string {
	t.Helper()
	return locate(t, "Kafka (SASL listener)", "TENANTWIRE_KAFKA_SASL_BROKER", "127.0.0.1:9094", "kafka://")
}

// KafkaGatedListener is the test broker's gated listener and the address
// it advertises, where nothing listens until a test forwards that address
// to the listener. Clients bootstrapped through the forwarder reach the
// broker only through it: closing it takes the broker away from them.
func KafkaGatedListener(t testing.TB) (listener, advertised string) {
	t.Helper()
	listener = locate(t, "Kafka (gated listener)", "TENANTWIRE_KAFKA_GATED_LISTENER", "127.0.0.1:9095", "kafka://")
	return listener, env("TENANTWIRE_KAFKA_GATED_ADVERTISED", "127.0.0.1:9096")
}

// locate is where a test server is, read from the environment variable key
// (def when unset), once the server answers there. scheme prefixes a bare
// host:port so that it parses as a URL; it is "" for a URL.
func locate(t testing.TB, name, key, def, scheme string) string {
	t.Helper()
	v := env(key, def)
	reachable(t, name, scheme+v)
	return v
}

// locateList is locate for a comma-separated list of host:port seeds, of
// which the first must answer.
func locateList(t testing.TB, name, key, def, scheme string) string {
	t.Helper()
	list := env(key, def)
	first, _, _ := strings.Cut(list, ",")
	reachable(t, name, scheme+strings.TrimSpace(first))
	return list
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Required reports whether missing services must fail tests.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("TENANTWIRE_REQUIRE_SERVICES") == "1"
}

// Missing ends t for want of a service: a loud skip, or a failure where
// services are required, so a green CI never means "nothing ran".
func Missing(t testing.TB, msg string) {
	t.Helper()
	if Required() {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
}

func reachable(t testing.TB, name, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s URL %q: %v", name, rawURL, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
	if err != nil {
		Missing(t, name+" is not reachable at "+u.Host+" ("+err.Error()+"); run scripts/services.sh or `make test`, which starts it")
	}
	conn.Close()
}
