package memory

import (
	"context"
	"slices"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// StreamConfig wires a stream route.
type StreamConfig struct {
	// TenantAware stamps every message with the bound tenant; reads see
	// only their tenant's messages (tagged).
	TenantAware bool
	// Stream names the container; PerTenant reaches namespace.
	Stream naming.Name
}

// Message is one stream entry. Offsets grow by one per container.
type Message struct {
	Offset  int64
	Payload []byte
	tenant  tenancy.ID
	// dropped: an offboarded tenant's message, kept so offsets hold.
	dropped bool
}

// StreamRoute adds a stream route and provides *Stream to the app,
// unnamed and as name:"<route>".
func StreamRoute(route string, cfg StreamConfig) Option {
	return modules.Own(func(c *config) {
		addRoute(c, streamRoute(route, cfg), containerProblems(cfg.Stream), func(s *store) *Stream {
			return newStreams(s, route, cfg)
		})
		if c.streams == nil {
			c.streams = map[string]StreamConfig{}
		}
		c.streams[route] = cfg
	})
}

func streamRoute(route string, cfg StreamConfig) floors.Route {
	return floors.Route{
		Name: route, Kind: "stream", TenantAware: cfg.TenantAware,
		Relations: []floors.Relation{containerRelation(cfg.Stream, "stream")},
	}
}

func newStreams(s *store, route string, cfg StreamConfig) *Stream {
	return &Stream{s: s, cfg: cfg, r: newRouteConfig(s, streamRoute(route, cfg))}
}

// Stream is a stream route.
type Stream struct {
	s   *store
	cfg StreamConfig
	r   routeConfig
}

// Append adds payload and returns its offset.
func (st *Stream) Append(ctx context.Context, payload []byte) (int64, error) {
	name, tag, end, err := st.r.scope(ctx, st.cfg.Stream, "stream")
	if err != nil {
		return 0, err
	}
	defer end()
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	off := int64(len(st.s.streams[name]) + 1)
	st.s.streams[name] = append(st.s.streams[name], Message{Offset: off, Payload: slices.Clone(payload), tenant: tag})
	close(st.s.wake)
	st.s.wake = make(chan struct{})
	return off, nil
}

// Read returns up to limit messages (0: all) after offset, oldest first.
func (st *Stream) Read(ctx context.Context, after int64, limit int) ([]Message, error) {
	msgs, _, err := st.read(ctx, after, limit)
	return msgs, err
}

// read also returns the channel closed by the next append, for consumers.
func (st *Stream) read(ctx context.Context, after int64, limit int) ([]Message, <-chan struct{}, error) {
	name, tag, end, err := st.r.scope(ctx, st.cfg.Stream, "stream")
	if err != nil {
		return nil, nil, err
	}
	end() // a read writes nothing
	st.s.mu.RLock()
	defer st.s.mu.RUnlock()
	var out []Message
	for _, m := range st.s.streams[name][min(max(after, 0), int64(len(st.s.streams[name]))):] {
		if m.tenant != tag || m.dropped {
			continue
		}
		m.Payload = slices.Clone(m.Payload)
		out = append(out, m)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, st.s.wake, nil
}
