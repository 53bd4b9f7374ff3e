package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// conns tracks the connections a client dials (its transport's and its
// readers'). kafka-go closes them in background goroutines after
// CloseIdleConnections, so without this a closed client would still hold
// connections while its successor opens new ones, and a routed module's
// connection bound would not hold. With a limit, a dial waits for a slot:
// the client never holds more than limit connections open.
type conns struct {
	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	closed bool
	dial   DialFunc
	// slots holds one token per open connection; nil: no limit.
	slots  chan struct{}
	module string
}

var errClientClosed = errors.New("kafka: client closed")

// newConns tracks the connections dial opens (nil: a plain net.Dialer),
// at most limit at once (0: no limit).
func newConns(dial DialFunc, limit int, module string) *conns {
	if dial == nil {
		d := &net.Dialer{Timeout: 5 * time.Second}
		dial = d.DialContext
	}
	cs := &conns{open: map[*trackedConn]struct{}{}, dial: dial, module: module}
	if limit > 0 {
		cs.slots = make(chan struct{}, limit)
	}
	return cs
}

func (cs *conns) dialTracked(ctx context.Context, network, addr string) (net.Conn, error) {
	if cs.slots != nil {
		select {
		case cs.slots <- struct{}{}:
		case <-ctx.Done(): // kafka-go bounds every dial by its dial timeout
			return nil, cs.exhausted(ctx.Err())
		}
	}
	nc, err := cs.dial(ctx, network, addr)
	if err != nil {
		cs.release()
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed { // a dial that raced the close
		_ = nc.Close()
		cs.release()
		return nil, errClientClosed
	}
	tc := &trackedConn{Conn: nc, cs: cs}
	cs.open[tc] = struct{}{}
	return tc, nil
}

func (cs *conns) release() {
	if cs.slots != nil {
		<-cs.slots
	}
}

func (cs *conns) exhausted(cause error) error {
	return fmt.Errorf("%w: %w", &tenancy.Error{
		Code: tenancy.CodeConnectionBudgetExhausted, Module: cs.module, Backend: rules.Name,
		Detail: fmt.Sprintf("the tenant's client holds its %d connections (RoutedConfig.MaxConnsPerClient) and none closed within the dial timeout", cap(cs.slots)),
		Fix:    "raise kafka.RoutedConfig.MaxConnsPerClient (and modules.ConnBudget), or run fewer consumers and concurrent produces per tenant",
	}, cause)
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
		tc.cs.release()
	})
	return err
}
