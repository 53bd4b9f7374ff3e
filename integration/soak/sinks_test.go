package soak_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/tenancy"
)

// sinks is the consumers' side: what reached Kafka (before the inbox)
// and what the inbox let through to the sinks after it.
type sinks struct {
	deps appDeps

	mu sync.Mutex
	// kafka[stream][tenant][seq] counts the tenant's own records handled
	// before the inbox (redeliveries show up here); kafkaCross counts
	// records handled under a tenant their body does not name. Slices
	// indexed by sequence number keep the soak's own bookkeeping small
	// next to the heap it measures.
	kafka      map[string]map[tenancy.ID][]uint16
	kafkaCross map[string]map[tenancy.ID]int
	// mongoDup counts records the inbox let through twice, seen as an
	// existing document.
	mongoDup map[tenancy.ID]int
	dead     int
	// done[stream][tenant] holds the sequence numbers that passed every
	// sink.
	done map[string]map[tenancy.ID][]bool
	// onDelivered is told each record's (stream, tenant, seq) once it has
	// passed every sink; the fault clock uses it for recovery times.
	onDelivered func(stream string, tenant tenancy.ID, seq int)
}

func newSinks() *sinks {
	s := &sinks{kafka: map[string]map[tenancy.ID][]uint16{}, kafkaCross: map[string]map[tenancy.ID]int{},
		mongoDup: map[tenancy.ID]int{}, done: map[string]map[tenancy.ID][]bool{}}
	for _, st := range streams {
		s.kafka[st] = map[tenancy.ID][]uint16{}
		s.kafkaCross[st] = map[tenancy.ID]int{}
		s.done[st] = map[tenancy.ID][]bool{}
	}
	return s
}

func (s *sinks) deadLetter(_ context.Context, _ kafkago.Message, _ error) error {
	s.mu.Lock()
	s.dead++
	s.mu.Unlock()
	return nil
}

// handle is a consumer's handler: the record's tenant is the one its
// consumer bound (its shard, or its header). The inbox marks
// (tenant, <stream>/<event id>) and writes the sink row in one
// transaction; the Redis and MongoDB writes follow once it committed, and
// are retried here rather than by redelivery (which the inbox would skip).
func (s *sinks) handle(stream string) kafka.Handler {
	return func(ctx context.Context, m kafkago.Message) error {
		tenant, err := tenancy.Require(ctx)
		if err != nil {
			return err
		}
		var b Body
		if err := json.Unmarshal(m.Value, &b); err != nil {
			return err
		}
		s.mu.Lock()
		if b.Tenant != tenant.String() || b.Seq < 1 {
			s.kafkaCross[stream][tenant]++
		} else {
			s.kafka[stream][tenant] = grow(s.kafka[stream][tenant], b.Seq)
			s.kafka[stream][tenant][b.Seq-1]++
		}
		s.mu.Unlock()

		event := stream + "/evt-" + strconv.Itoa(b.Seq)
		ran, err := s.deps.Inbox.Once(ctx, event, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO "+sinkTable+" (tenant_id, stream, seq, body) VALUES ($1, $2, $3, $4)",
				tenant.String(), stream, b.Seq, m.Value)
			return err
		})
		if err != nil || !ran {
			return err
		}
		key := stream + "-" + strconv.Itoa(b.Seq)
		for _, step := range []func() error{
			// AddOnce: a retry after a lost reply (the Redis restart) must not count twice.
			func() error { _, _, err := s.deps.Counter.AddOnce(ctx, stream, event, 1, time.Hour); return err },
			func() error { return s.deps.Cache.Set(ctx, key, m.Value, 0) },
			func() error {
				_, err := s.deps.Mongo.Create(ctx, key, b)
				if errors.Is(err, document.ErrExists) {
					s.mu.Lock()
					s.mongoDup[tenant]++
					s.mu.Unlock()
					return nil
				}
				return err
			},
		} {
			for {
				err := step()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return ctx.Err() // stopping: the record is lost to the sinks after the inbox, and the checker says so
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		s.mu.Lock()
		if b.Seq >= 1 {
			s.done[stream][tenant] = grow(s.done[stream][tenant], b.Seq)
			s.done[stream][tenant][b.Seq-1] = true
		}
		s.mu.Unlock()
		if s.onDelivered != nil {
			s.onDelivered(stream, tenant, b.Seq)
		}
		return nil
	}
}

// waitDelivered waits until every acknowledged record of every stream
// passed every sink.
func (s *sinks) waitDelivered(sent map[tenancy.ID]int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := 0
		s.mu.Lock()
		for _, st := range streams {
			for id, n := range sent {
				done := s.done[st][id]
				for seq := 1; seq <= n; seq++ {
					if seq > len(done) || !done[seq-1] {
						left++
					}
				}
			}
		}
		s.mu.Unlock()
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d records still on their way after %v", left, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// grow extends s to hold index n-1.
func grow[T any](s []T, n int) []T {
	if n > len(s) {
		s = append(s, make([]T, n-len(s))...)
	}
	return s
}

// countErr counts errors and keeps the last one.
type countErr struct {
	n    atomic.Int64
	last atomic.Value
}

func (c *countErr) add(err error) {
	c.n.Add(1)
	c.last.Store(err.Error())
}
