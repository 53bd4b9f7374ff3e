package kafka

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// conns tracks the connections a client's transport dials. kafka-go closes
// them in background goroutines after CloseIdleConnections, so without this
// a closed client would still hold connections while its successor opens
// new ones, and a routed module's connection bound would not hold.
type conns struct {
	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	closed bool
	dial   DialFunc
}

var errClientClosed = errors.New("kafka: client closed")

// newConns tracks the connections dial opens (nil: a plain net.Dialer).
func newConns(dial DialFunc) *conns {
	if dial == nil {
		d := &net.Dialer{Timeout: 5 * time.Second}
		dial = d.DialContext
	}
	return &conns{open: map[*trackedConn]struct{}{}, dial: dial}
}

func (cs *conns) dialTracked(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := cs.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed { // a dial that raced the close
		_ = nc.Close()
		return nil, errClientClosed
	}
	tc := &trackedConn{Conn: nc, cs: cs}
	cs.open[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every connection still open and refuses later dials; it
// returns once they are closed.
func (cs *conns) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	open := make([]*trackedConn, 0, len(cs.open))
	for tc := range cs.open {
		open = append(open, tc)
	}
	cs.mu.Unlock()
	for _, tc := range open {
		_ = tc.Close()
	}
}

type trackedConn struct {
	net.Conn
	cs   *conns
	once sync.Once
}

func (tc *trackedConn) Close() error {
	err := tc.Conn.Close()
	tc.once.Do(func() {
		tc.cs.mu.Lock()
		delete(tc.cs.open, tc)
		tc.cs.mu.Unlock()
	})
	return err
}
