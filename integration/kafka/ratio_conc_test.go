package kafka_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/ratio"
)

// concTopics is the larger tenant count of the concurrency pair:
// TENANTWIRE_CONC_KAFKA_TOPICS, default 1,000 topics on the test broker,
// which other tests share (10,000 topics: see docs/performance.md).
func concTopics(t *testing.T) int {
	s := os.Getenv("TENANTWIRE_CONC_KAFKA_TOPICS")
	if s == "" {
		return 1000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("TENANTWIRE_CONC_KAFKA_TOPICS=%q: want a positive number", s)
	}
	return n
}

// TestRatioConcTenantTopicProduce: C<tenants>, a synchronous produce to
// the tenant's own topic from G goroutines (64, and 8 as "-g8") vs a raw
// kafka-go Writer naming the topic per message with the same headers and
// settings (BatchSize 1, one writer shared by the goroutines as the
// route's is), on the real test broker over 1 and concTopics provisioned
// topics. Each side walks on through the topics from round to round.
func TestRatioConcTenantTopicProduce(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	for _, tenants := range []int{1, concTopics(t)} {
		t.Run(strconv.Itoa(tenants), func(t *testing.T) {
			sp := newSpace(t)
			s := newScaleKafka(t, sp.broker, sp.name("orders."), tenants)
			raw := rawWriter(t, s.broker)
			raw.BatchSize = 1
			key, value := []byte("order-1"), []byte(`{"total":42}`)
			ours := func(i int) error {
				return s.producer.Produce(s.ctxs[i], kafka.Message{Key: key, Value: value})
			}
			hand := func(i int) error {
				id := s.ids[i]
				return raw.WriteMessages(s.ctxs[i], kafkago.Message{Topic: s.prefix + id.Hex(), Key: key, Value: value, Headers: []kafkago.Header{
					{Key: kafka.HeaderTenant, Value: []byte(id.String())},
					{Key: kafka.HeaderEventID, Value: []byte("0123456789abcdef0123456789abcdef")},
				}})
			}
			// The raw writer's first write to each topic fetches its
			// metadata, as the route's did while provisioning.
			if err := ratio.Parallel(8, tenants, hand); err != nil {
				t.Fatal(err)
			}
			for _, g := range []int{64, 8} {
				name := "kafka-tenant-topic-produce"
				if g != 64 {
					name += "-g" + strconv.Itoa(g)
				}
				t.Run("g"+strconv.Itoa(g), func(t *testing.T) {
					ratio.ReportParallel(t, ratio.Pair{Label: "C" + strconv.Itoa(tenants), Name: name, Iterations: 500, Rounds: 11, Cap: 30 * time.Second,
						Ours: ratio.ParallelSide(t, g, tenants, ours), Baseline: ratio.ParallelSide(t, g, tenants, hand)}, 1.05, 2500)
				})
			}
		})
	}
}
