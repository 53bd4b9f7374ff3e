// Package connprobe counts the connections a client holds to a server,
// for tests that prove a connection bound: as a dialer wrapper in the
// client, or as a listener wrapper inside an embedded server.
package connprobe

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
)

// Counter tracks open connections and their peak.
type Counter struct{ open, peak atomic.Int64 }

func (c *Counter) add(d int64) {
	n := c.open.Add(d)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
}

// Open is the number of connections open now.
func (c *Counter) Open() int64 { return c.open.Load() }

// Peak is the most connections open at once so far.
func (c *Counter) Peak() int64 { return c.peak.Load() }

// Track counts c as open until its Close: for a dialer wrapper on the
// client side, which sees a close the moment it happens.
func (c *Counter) Track(nc net.Conn) net.Conn {
	c.add(1)
	return &conn{Conn: nc, done: func() { c.add(-1) }}
}

// DialContext dials as a zero net.Dialer does and tracks the connection:
// the dial function of a client whose connections a test counts.
func (c *Counter) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return c.Track(nc), nil
}

// Listener counts the connections it accepts until each is closed.
type Listener struct {
	net.Listener
	*Counter
}

// Wrap counts ln's connections.
func Wrap(ln net.Listener) *Listener { return &Listener{Listener: ln, Counter: &Counter{}} }

// Accept counts the accepted connection until its Close.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.add(1)
	return &conn{Conn: c, done: func() { l.add(-1) }}, nil
}

type conn struct {
	net.Conn
	once sync.Once
	done func()
}

func (c *conn) Close() error {
	c.once.Do(c.done)
	return c.Conn.Close()
}
