package redis

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Stream is a stream route. On a tenant-scoped route each tenant has its
// own stream key, so a consumer group bound to tenant B reads nothing of
// tenant A's stream.
type Stream struct {
	route
	mu     sync.Mutex
	groups map[string]struct{} // stream key + group, known to exist
}

// groupCacheMax bounds the memo of created groups (R7); on overflow it is
// cleared wholesale and groups are re-created idempotently.
const groupCacheMax = 10000

func newStream(r route) *Stream { return &Stream{route: r, groups: map[string]struct{}{}} }

// Entry is one stream entry.
type Entry struct {
	ID     string
	Values map[string]any
}

// Append adds an entry and returns its ID.
func (s *Stream) Append(ctx context.Context, values map[string]any) (string, error) {
	cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return "", err
	}
	defer done()
	return cl.XAdd(ctx, &goredis.XAddArgs{Stream: k, Values: values}).Result()
}

// Len returns the number of entries.
func (s *Stream) Len(ctx context.Context) (int64, error) {
	cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return 0, err
	}
	defer done()
	return cl.XLen(ctx, k).Result()
}

// Range returns up to count entries with IDs in [start, end] ("-" and "+"
// are the ends of the stream).
func (s *Stream) Range(ctx context.Context, start, end string, count int64) ([]Entry, error) {
	cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return nil, err
	}
	defer done()
	msgs, err := cl.XRangeN(ctx, k, start, end, count).Result()
	return entries(msgs), err
}

// Trim keeps about the newest maxLen entries (approximate trimming, which
// Redis does in whole nodes) and returns how many it removed.
func (s *Stream) Trim(ctx context.Context, maxLen int64) (int64, error) {
	cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return 0, err
	}
	defer done()
	return cl.XTrimMaxLenApprox(ctx, k, maxLen, 0).Result()
}

// ReadGroup reads up to count new entries for consumer in group, creating
// the group (from the start of the stream) on first use. block > 0 waits
// that long for entries; block <= 0 returns at once.
func (s *Stream) ReadGroup(ctx context.Context, group, consumer string, count int64, block time.Duration) ([]Entry, error) {
	cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return nil, err
	}
	defer done()
	if err := s.ensureGroup(ctx, cl, k, group); err != nil {
		return nil, err
	}
	if block <= 0 {
		block = -1 // go-redis omits BLOCK only for a negative duration
	}
	res, err := cl.XReadGroup(ctx, &goredis.XReadGroupArgs{
		Group: group, Consumer: consumer, Streams: []string{k, ">"}, Count: count, Block: block,
	}).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		if strings.HasPrefix(err.Error(), "NOGROUP") {
			s.forgetGroup(k, group) // the stream was deleted; re-create next time
		}
		return nil, err
	}
	var out []Entry
	for _, st := range res {
		out = append(out, entries(st.Messages)...)
	}
	return out, nil
}

// Claim takes over up to count entries of group pending for longer than
// minIdle (their consumer died before acknowledging them).
func (s *Stream) Claim(ctx context.Context, group, consumer string, minIdle time.Duration, count int64) ([]Entry, error) {
	cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return nil, err
	}
	defer done()
	if err := s.ensureGroup(ctx, cl, k, group); err != nil {
		return nil, err
	}
	msgs, _, err := cl.XAutoClaim(ctx, &goredis.XAutoClaimArgs{
		Stream: k, Group: group, Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: count,
	}).Result()
	return entries(msgs), err
}

// Ack acknowledges entries read through group.
func (s *Stream) Ack(ctx context.Context, group string, ids ...string) error {
	cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return err
	}
	defer done()
	return cl.XAck(ctx, k, group, ids...).Err()
}

func (s *Stream) ensureGroup(ctx context.Context, cl goredis.UniversalClient, key, group string) error {
	memo := key + "\x00" + group
	s.mu.Lock()
	_, ok := s.groups[memo]
	s.mu.Unlock()
	if ok {
		return nil
	}
	err := cl.XGroupCreateMkStream(ctx, key, group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return err
	}
	s.mu.Lock()
	if len(s.groups) >= groupCacheMax {
		clear(s.groups)
	}
	s.groups[memo] = struct{}{}
	s.mu.Unlock()
	return nil
}

func (s *Stream) forgetGroup(key, group string) {
	s.mu.Lock()
	delete(s.groups, key+"\x00"+group)
	s.mu.Unlock()
}

func entries(msgs []goredis.XMessage) []Entry {
	out := make([]Entry, len(msgs))
	for i, m := range msgs {
		out[i] = Entry{ID: m.ID, Values: m.Values}
	}
	return out
}

// Destination appends outbox events to a stream route: the relay binds
// each row's tenant in ctx, and a tenant-aware stream then routes the event
// to that tenant's stream.
type Destination struct{ stream *Stream }

// NewDestination returns the outbox destination for a stream route.
func NewDestination(s *Stream) *Destination { return &Destination{stream: s} }

// Send appends one event as the fields "event_id" and "payload". The
// tenant comes from ctx (bound by the relay); a tenant-aware stream fails
// closed without one. It is at-least-once: a retried send appends again,
// and consumers dedupe by event_id (an Idempotency route does that).
func (d *Destination) Send(ctx context.Context, eventID string, payload []byte) error {
	if eventID == "" {
		return errors.New("redis: an outbox event needs an ID")
	}
	_, err := d.stream.Append(ctx, map[string]any{"event_id": eventID, "payload": payload})
	return err
}
