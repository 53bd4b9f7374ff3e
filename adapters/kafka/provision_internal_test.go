package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// After Provision, the shared transport's metadata cache (what the writer
// reads partitions from) names the tenant's topics with a leader, even when
// another process created them first (CreateTopics answers
// TopicAlreadyExists and kafka-go refreshes nothing). Real broker.
func TestProvisionRefreshesSharedMetadata(t *testing.T) {
	broker := strings.Split(testsvc.KafkaBrokers(t), ",")[0]
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	prefix := "tw-" + hex.EncodeToString(b) + "-"
	spec := newSpec("orders", kindProducer, "kafka.ProducerConfig", topicFields{topic: naming.PerTenant(prefix)})
	mk := func() (*lifecycleTarget, *client) {
		c := newClient([]string{broker}, nil, nil, nil, nil, 0, "events")
		t.Cleanup(c.close)
		return &lifecycleTarget{core: &core{module: "events", shared: c, routes: []*routeSpec{spec}}, routes: []*routeSpec{spec}, teardown: true}, c
	}
	here, c := mk()
	elsewhere, _ := mk()
	ctx := context.Background()
	id := tenancy.MustParseID("00000000-0000-4000-e000-0000000000aa")
	t.Cleanup(func() { _ = here.Teardown(ctx, id) })
	topic := prefix + id.Hex()
	// Warm this client's cache before the topic exists.
	if res, err := c.admin().Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}}); err != nil || res.Topics[0].Error == nil {
		t.Fatalf("warm-up: %v %+v", err, res)
	}
	if err := elsewhere.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := here.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := c.admin().Metadata(mctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	if missing := unserved(res, []string{topic}); len(missing) != 0 {
		t.Fatalf("the shared metadata cache does not serve %s right after Provision: %+v", topic, res.Topics)
	}
}
