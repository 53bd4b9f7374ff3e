// Package connprobe counts the connections a client holds to a server,
// for tests that prove a connection bound: as a TCP proxy in front of the
// server, or as a listener wrapper inside an embedded one.
package connprobe

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
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

// Proxy forwards every connection to target and counts the open ones: a
// client connection counts until either side closes it.
type Proxy struct {
	*Counter
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

// Start runs a proxy to target on a free local port until the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Counter: &Counter{}, ln: ln, target: target, conns: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns[c] = true
			p.mu.Unlock()
			wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve(c net.Conn) {
	p.add(1)
	defer p.add(-1)
	defer func() {
		_ = c.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done // either side closed: the connection is over
	_ = c.Close()
	_ = up.Close()
	<-done
}
