package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/tenancy"
)

// tenantPool is a dynamic read's own pool on a plain client: at most max
// connections (counting those still closing), each serving one tenant for
// its whole life. DISCARD ALL
// does not undo everything a session can do (a custom setting's name stays
// defined, a loaded library stays loaded, setseed fixes random()'s
// sequence) and not all of it can be detected afterwards, so a connection
// never passes from one tenant to another. A read takes an idle connection
// of its own tenant, else opens one; in a full pool it closes the least
// recently used idle connection of another tenant to make room, and only
// that one, so a busy tenant keeps its connections.
//
// It honours the connection settings of the module's pool configuration
// (BeforeConnect, AfterConnect, BeforeClose, MaxConnLifetime,
// MaxConnIdleTime; a connection idle for a second is pinged before use),
// not its per-acquire hooks. Waiters are not served in order.
type tenantPool struct {
	cfg *pgxpool.Config // nil: the module has no connection configured
	max int

	mu     sync.Mutex
	open   int        // connections open or opening, idle or in use
	idle   []idleConn // least recently released first
	freed  chan struct{}
	closed bool
}

type idleConn struct {
	tenantConn
	since time.Time
}

// tenantConn is a connection and the one tenant it serves.
type tenantConn struct {
	conn   *pgx.Conn
	tenant tenancy.ID
	expiry time.Time // zero: no lifetime limit
}

// pingIdle: a connection idle this long is pinged before use, as pgxpool
// does, so a connection the server dropped is replaced, not handed out.
const pingIdle = time.Second

var errPoolClosed = errors.New("postgres: dynamic read: pool closed")

func newTenantPool(cfg *pgxpool.Config, max int) *tenantPool {
	return &tenantPool{cfg: cfg, max: max, freed: make(chan struct{})}
}

// acquire returns a connection serving tenant only. The caller hands it
// back with release.
func (p *tenantPool) acquire(ctx context.Context, tenant tenancy.ID) (tenantConn, error) {
	if p.cfg == nil {
		return tenantConn{}, errNoConnection
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return tenantConn{}, errPoolClosed
		}
		stale := p.takeStale()
		own, found := p.takeOwn(tenant)
		var victim *pgx.Conn
		switch {
		case found:
		case p.open < p.max:
			p.open++
		case len(p.idle) > 0:
			// The slot passes from the closed connection to the new one.
			victim = p.idle[0].conn
			p.idle = slices.Delete(p.idle, 0, 1)
		default:
			freed := p.freed
			p.mu.Unlock()
			p.closeStale(ctx, stale)
			select {
			case <-freed:
				continue
			case <-ctx.Done():
				return tenantConn{}, ctx.Err()
			}
		}
		p.mu.Unlock()
		p.closeStale(ctx, stale)
		if found {
			if time.Since(own.since) < pingIdle || own.conn.Ping(ctx) == nil {
				return own.tenantConn, nil
			}
			p.release(ctx, own.tenantConn, false)
			if err := ctx.Err(); err != nil {
				return tenantConn{}, err
			}
			continue
		}
		if victim != nil {
			p.closeConn(ctx, victim)
		}
		conn, err := p.connect(ctx)
		if err != nil {
			p.freeSlots(1)
			return tenantConn{}, err
		}
		tc := tenantConn{conn: conn, tenant: tenant}
		if lt := p.cfg.MaxConnLifetime; lt > 0 {
			jitter := time.Duration(rand.Float64() * float64(p.cfg.MaxConnLifetimeJitter))
			tc.expiry = time.Now().Add(lt + jitter)
		}
		return tc, nil
	}
}

// release hands tc back: idle for its tenant when reuse is true and it is
// healthy, closed otherwise.
func (p *tenantPool) release(ctx context.Context, tc tenantConn, reuse bool) {
	pc := tc.conn.PgConn()
	p.mu.Lock()
	if p.closed || !reuse || pc.IsClosed() || pc.IsBusy() || pc.TxStatus() != 'I' ||
		(!tc.expiry.IsZero() && time.Now().After(tc.expiry)) {
		p.mu.Unlock()
		p.closeConn(ctx, tc.conn)
		p.freeSlots(1)
		return
	}
	p.idle = append(p.idle, idleConn{tenantConn: tc, since: time.Now()})
	p.signal()
	p.mu.Unlock()
}

// takeOwn removes and returns tenant's most recently released idle
// connection. p.mu is held.
func (p *tenantPool) takeOwn(tenant tenancy.ID) (idleConn, bool) {
	for i := len(p.idle) - 1; i >= 0; i-- {
		if p.idle[i].tenant == tenant {
			ic := p.idle[i]
			p.idle = slices.Delete(p.idle, i, i+1)
			return ic, true
		}
	}
	return idleConn{}, false
}

// takeStale removes the idle connections past their lifetime or idle
// time, for the caller to close once p.mu is released. p.mu is held.
func (p *tenantPool) takeStale() []*pgx.Conn {
	var stale []*pgx.Conn
	now := time.Now()
	kept := p.idle[:0]
	for _, ic := range p.idle {
		if (!ic.expiry.IsZero() && now.After(ic.expiry)) || (p.cfg.MaxConnIdleTime > 0 && now.Sub(ic.since) > p.cfg.MaxConnIdleTime) {
			stale = append(stale, ic.conn)
			continue
		}
		kept = append(kept, ic)
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	return stale
}

// closeStale closes what takeStale removed and frees their slots.
func (p *tenantPool) closeStale(ctx context.Context, stale []*pgx.Conn) {
	if len(stale) == 0 {
		return
	}
	for _, c := range stale {
		p.closeConn(ctx, c)
	}
	p.freeSlots(len(stale))
}

// freeSlots gives back n slots, once their connections are closed (or
// were never opened), so the bound counts connections still closing.
func (p *tenantPool) freeSlots(n int) {
	p.mu.Lock()
	p.open -= n
	p.signal()
	p.mu.Unlock()
}

// signal wakes every waiter: a slot or an idle connection was freed.
// p.mu is held.
func (p *tenantPool) signal() {
	close(p.freed)
	p.freed = make(chan struct{})
}

func (p *tenantPool) connect(ctx context.Context) (*pgx.Conn, error) {
	cc := p.cfg.ConnConfig.Copy()
	if p.cfg.BeforeConnect != nil {
		if err := p.cfg.BeforeConnect(ctx, cc); err != nil {
			return nil, err
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	if p.cfg.AfterConnect != nil {
		if err := p.cfg.AfterConnect(ctx, conn); err != nil {
			p.closeConn(ctx, conn)
			return nil, err
		}
	}
	return conn, nil
}

// closeConn closes one of the pool's connections.
func (p *tenantPool) closeConn(ctx context.Context, conn *pgx.Conn) {
	if p.cfg.BeforeClose != nil {
		p.cfg.BeforeClose(conn)
	}
	closeConn(ctx, conn)
}

// close closes the idle connections; those in use close on release.
func (p *tenantPool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.signal()
	p.mu.Unlock()
	for _, ic := range idle {
		p.closeConn(context.Background(), ic.conn)
	}
	p.freeSlots(len(idle))
}
