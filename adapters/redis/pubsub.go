package redis

import (
	"context"
	"errors"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// PubSub is a pub/sub route. On a tenant-scoped route the channel name
// carries the tenant, so a subscriber hears only its own tenant's channels.
// Channels use classic pub/sub, which Redis Cluster broadcasts to every
// node, so they do not depend on hash slots.
type PubSub struct{ route }

// Message is one delivered pub/sub message; Channel is the route-level
// channel name the publisher used.
type Message struct {
	Channel string
	Payload []byte
}

// Publish sends payload on channel and returns how many subscribers got it.
// On a cluster that is Redis's count on the node that took the PUBLISH
// only; subscribers on other nodes get the message but are not counted.
func (p *PubSub) Publish(ctx context.Context, channel string, payload []byte) (int64, error) {
	ctx, cl, k, done, err := p.target(ctx, channel)
	if err != nil {
		return 0, err
	}
	defer done()
	return cl.Publish(ctx, k, payload).Result()
}

// Subscription receives the messages of the channels it subscribed to,
// for one receiving goroutine at a time.
// Close it to stop; it holds one connection.
type Subscription struct {
	ps      *goredis.PubSub
	prefix  string
	pending []Message
	release func()
	once    sync.Once
}

// Subscribe subscribes to channels under the tenant bound to ctx (or
// deployment-wide on a tenant-global route) and returns once Redis has
// confirmed every subscription, so nothing published afterwards is missed.
func (p *PubSub) Subscribe(ctx context.Context, channels ...string) (*Subscription, error) {
	if len(channels) == 0 {
		return nil, errors.New("redis: subscribe needs at least one channel")
	}
	// One target per channel: the same tenant, so the same client; the
	// first one's pool reference is held until Close.
	// The SUBSCRIBE runs under the first one's context: its call lasts
	// until Close.
	var cl goredis.UniversalClient
	var hold func()
	var held context.Context
	keys := make([]string, len(channels))
	for i, ch := range channels {
		cctx, c, k, done, err := p.listen(ctx, ch)
		if err != nil {
			if hold != nil {
				hold()
			}
			return nil, err
		}
		if hold == nil {
			hold, held = done, cctx
		} else {
			done()
		}
		cl, keys[i] = c, k
	}
	ctx = held
	prefix := strings.TrimSuffix(keys[0], escapeString(channels[0]))
	ps := cl.Subscribe(ctx, keys...)
	s := &Subscription{ps: ps, prefix: prefix, release: hold}
	for confirmed := 0; confirmed < len(keys); {
		msg, err := ps.Receive(ctx)
		if err != nil {
			s.Close()
			return nil, err
		}
		switch m := msg.(type) {
		case *goredis.Subscription:
			confirmed++
		case *goredis.Message:
			if dm, ok := s.decode(m); ok {
				s.pending = append(s.pending, dm)
			}
		}
	}
	return s, nil
}

// Receive waits for the next message. A deadline on ctx bounds the wait;
// Close from another goroutine ends it.
func (s *Subscription) Receive(ctx context.Context) (Message, error) {
	if len(s.pending) > 0 {
		m := s.pending[0]
		s.pending = s.pending[1:]
		return m, nil
	}
	for {
		m, err := s.ps.ReceiveMessage(ctx)
		if err != nil {
			return Message{}, err
		}
		if dm, ok := s.decode(m); ok {
			return dm, nil
		}
	}
}

// Close ends the subscription and returns its connection.
func (s *Subscription) Close() error {
	err := s.ps.Close()
	s.once.Do(s.release)
	return err
}

// decode maps a Redis channel back to the route's channel name; it drops
// anything outside the subscription's own prefix, which a subscription to
// exact channel names cannot receive anyway.
func (s *Subscription) decode(m *goredis.Message) (Message, bool) {
	rest, ok := strings.CutPrefix(m.Channel, s.prefix)
	if !ok {
		return Message{}, false
	}
	ch, ok := unescape(rest)
	if !ok {
		return Message{}, false
	}
	return Message{Channel: ch, Payload: []byte(m.Payload)}, true
}

func escapeString(s string) string {
	var b strings.Builder
	writeEscaped(&b, s)
	return b.String()
}
