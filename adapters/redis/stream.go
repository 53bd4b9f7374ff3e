package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Stream is a stream route. On a tenant-scoped route each tenant has its
// own stream key, so a consumer group bound to tenant B reads nothing of
// tenant A's stream.
type Stream struct {
	route
	mu     sync.Mutex
	groups map[string]struct{} // stream key + group, known to exist
}

// groupCacheMax bounds the memo of created groups, so many tenants cannot
// grow it without limit; on overflow it is cleared wholesale and groups are
// re-created idempotently.
const groupCacheMax = 10000

func newStream(r route) *Stream { return &Stream{route: r, groups: map[string]struct{}{}} }

// Entry is one stream entry.
type Entry struct {
	ID     string
	Values map[string]any
}

// Append adds an entry and returns its ID.
func (s *Stream) Append(ctx context.Context, values map[string]any) (string, error) {
	ctx, cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return "", err
	}
	defer done()
	return cl.XAdd(ctx, &goredis.XAddArgs{Stream: k, Values: values}).Result()
}

// Len returns the number of entries.
func (s *Stream) Len(ctx context.Context) (int64, error) {
	ctx, cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return 0, err
	}
	defer done()
	return cl.XLen(ctx, k).Result()
}

// Range returns up to count entries with IDs in [start, end] ("-" and "+"
// are the ends of the stream).
func (s *Stream) Range(ctx context.Context, start, end string, count int64) ([]Entry, error) {
	ctx, cl, k, done, err := s.target(ctx, "")
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
	ctx, cl, k, done, err := s.target(ctx, "")
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
	ctx, cl, k, done, err := s.groupTarget(ctx, group)
	if err != nil {
		return nil, err
	}
	defer done()
	if block <= 0 {
		block = -1 // go-redis omits BLOCK only for a negative duration
	}
	read := func() ([]goredis.XStream, error) {
		return cl.XReadGroup(ctx, &goredis.XReadGroupArgs{
			Group: group, Consumer: consumer, Streams: []string{k, ">"}, Count: count, Block: block,
		}).Result()
	}
	res, err := read()
	if isNoGroup(err) {
		// The stream was deleted since the group was made: make it again.
		s.forgetGroup(k, group)
		if err = s.ensureGroup(ctx, cl, k, group); err == nil {
			res, err = read()
		}
	}
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		if isNoGroup(err) {
			s.forgetGroup(k, group)
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
	ctx, cl, k, done, err := s.groupTarget(ctx, group)
	if err != nil {
		return nil, err
	}
	defer done()
	claim := func() ([]goredis.XMessage, error) {
		msgs, _, err := cl.XAutoClaim(ctx, &goredis.XAutoClaimArgs{
			Stream: k, Group: group, Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: count,
		}).Result()
		return msgs, err
	}
	msgs, err := claim()
	if isNoGroup(err) {
		// As ReadGroup: a stale memo would fail every later claim.
		s.forgetGroup(k, group)
		if err = s.ensureGroup(ctx, cl, k, group); err == nil {
			msgs, err = claim()
		}
	}
	return entries(msgs), err
}

// Ack acknowledges entries read through group.
func (s *Stream) Ack(ctx context.Context, group string, ids ...string) error {
	ctx, cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return err
	}
	defer done()
	return cl.XAck(ctx, k, group, ids...).Err()
}

// groupTarget is target for a call through group, the group created
// on the stream first.
func (s *Stream) groupTarget(ctx context.Context, group string) (context.Context, goredis.UniversalClient, string, func(), error) {
	ctx, cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return ctx, nil, "", nil, err
	}
	if err := s.ensureGroup(ctx, cl, k, group); err != nil {
		done()
		return ctx, nil, "", nil, err
	}
	return ctx, cl, k, done, nil
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

// forgetTenant drops the memo of tenant's groups: its stream keys were
// unlinked by its offboarding.
func (s *Stream) forgetTenant(tenant tenancy.ID) {
	hex := tenant.Hex()
	s.mu.Lock()
	defer s.mu.Unlock()
	for memo := range s.groups {
		if key, _, _ := strings.Cut(memo, "\x00"); keyOfTenant(key, hex) {
			delete(s.groups, memo)
		}
	}
}

// isNoGroup: the group (or its stream) is gone, deleted elsewhere (an
// offboarding on another replica, a DEL): the memo is stale.
func isNoGroup(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOGROUP") }

func entries(msgs []goredis.XMessage) []Entry {
	out := make([]Entry, len(msgs))
	for i, m := range msgs {
		out[i] = Entry{ID: m.ID, Values: m.Values}
	}
	return out
}

var _ outbox.Destination = (*Stream)(nil)

// Deliver makes the stream an outbox relay's destination
// (outbox.Destination), as a *kafka.Producer is: it appends m to the
// stream of the tenant the relay bound in ctx, so a tenant-aware stream
// routes per tenant and fails closed without one. The fields are
// event_id, topic, key, payload and one "header:<name>" per header, in
// that order. A message whose tenant is not the one bound in ctx is
// refused rather than written to either tenant. Delivery is at least
// once: consumers dedupe on event_id.
func (s *Stream) Deliver(ctx context.Context, m outbox.Message) error {
	if m.EventID == "" {
		return errors.New("redis: an outbox message needs an EventID")
	}
	if !m.Tenant.IsZero() {
		if bound, ok := tenancy.FromContext(ctx); !ok || bound != m.Tenant {
			return fmt.Errorf("redis: outbox message %s is for tenant %s, but ctx binds another scope", m.EventID, m.Tenant)
		}
	}
	values := []any{"event_id", m.EventID, "topic", m.Topic, "key", m.Key, "payload", m.Payload}
	names := make([]string, 0, len(m.Headers))
	for h := range m.Headers {
		names = append(names, h)
	}
	slices.Sort(names)
	for _, h := range names {
		values = append(values, "header:"+h, m.Headers[h])
	}
	ctx, cl, k, done, err := s.target(ctx, "")
	if err != nil {
		return err
	}
	defer done()
	return cl.XAdd(ctx, &goredis.XAddArgs{Stream: k, Values: values}).Err()
}
