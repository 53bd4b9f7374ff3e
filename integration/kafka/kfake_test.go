package kafka_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// fakeCluster starts kfake, an in-process Kafka, on 127.0.0.1, for what the
// shared test broker cannot give: a second cluster. Everything else runs
// against the real broker (newSpace).
func fakeCluster(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}
