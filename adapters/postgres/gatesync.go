package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Ownership gates across replicas. A gate caches positives; another
// client of the database (another replica) may delete the id meanwhile.
// So every delete through a plain client (Documents.Delete, Teardown,
// Client.Forget) sends a notice on the database's channel gateChannel, in
// the transaction of the delete, and every plain client that built a gate
// listens on a connection of its pool and forgets what the notices name.
//
// The channel fails closed. The listener sends itself a heartbeat every
// gateBeat and must hear it back within gateBeatWait; notices arrive in
// commit order, so hearing a heartbeat means every delete committed
// before it was sent has been heard. Until the first heartbeat is heard,
// and from the moment one is late or the connection fails, the client's
// gates are suspended (cache dropped, nothing cached; every Check looks
// up). A positive of an id deleted elsewhere is therefore served at most
// gateBeat + gateBeatWait after the delete committed, and normally until
// its notice arrives, a few milliseconds.
const (
	gateChannel  = "tenantwire_gate"
	gateBeat     = time.Second
	gateBeatWait = 2 * time.Second
	// maxGatePayload is PostgreSQL's limit on a notice (8000 bytes, less
	// one); a longer one names the whole tenant instead.
	maxGatePayload   = 7999
	gateRetryMin     = 50 * time.Millisecond
	gateRetryMax     = 5 * time.Second
	gateNoticeID     = 'o' // an id left a table
	gateNoticeTenant = 't' // every id of a tenant (teardown)
	gateNoticeBeat   = 'h' // a listener's heartbeat
)

// errGatePoolTooSmall: the listener would take the module's only
// connection, so it does not run and the gates stay suspended.
var errGatePoolTooSmall = errors.New("postgres: ownership gates: a pool of one connection cannot spare one for the invalidation channel")

// gateIDNotice is the notice that tenant's id left table (quoted and
// qualified, as statements name it), whose id column is col ("" for any).
// A notice too long for the channel names the tenant instead.
func gateIDNotice(table, col string, tenant tenancy.ID, id string) string {
	p := string(gateNoticeID) + tenant.String() + strconv.Itoa(len(table)) + ":" + table + strconv.Itoa(len(col)) + ":" + col + id
	if len(p) > maxGatePayload {
		return gateTenantNotice(tenant)
	}
	return p
}

func gateTenantNotice(tenant tenancy.ID) string { return string(gateNoticeTenant) + tenant.String() }

type gateNotice struct {
	kind           byte
	tenant         tenancy.ID
	table, col, id string
}

// parseGateNotice reads a notice; ok is false for anything malformed.
func parseGateNotice(p string) (n gateNotice, ok bool) {
	if p == "" {
		return n, false
	}
	n.kind, p = p[0], p[1:]
	if n.kind == gateNoticeBeat {
		return n, true
	}
	if len(p) < 36 {
		return n, false
	}
	var err error
	if n.tenant, err = tenancy.ParseID(p[:36]); err != nil {
		return n, false
	}
	p = p[36:]
	switch n.kind {
	case gateNoticeTenant:
		return n, p == ""
	case gateNoticeID:
		if n.table, p, ok = cutCounted(p); !ok {
			return n, false
		}
		if n.col, p, ok = cutCounted(p); !ok {
			return n, false
		}
		n.id = p
		return n, true
	}
	return n, false
}

// cutCounted splits "<n>:<n bytes>rest".
func cutCounted(p string) (field, rest string, ok bool) {
	size, rest, found := strings.Cut(p, ":")
	n, err := strconv.Atoi(size)
	if !found || err != nil || n < 0 || n > len(rest) {
		return "", "", false
	}
	return rest[:n], rest[n:], true
}

// listen starts the client's invalidation listener, once, on a plain
// client. Gates built before it has heard its first heartbeat start
// suspended. Behind a transaction pooler none starts and the gates stay
// suspended: LISTEN holds a server session the pooler hands to others
// between transactions, and the listener would still hear its own
// heartbeats whenever the pooler gave it that session back, taking itself
// for in step while other clients' notices went to whoever held it.
func (s *gateSet) listen(c *Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listening || c.routed != nil {
		return
	}
	if c.pooled {
		s.listening = true // never synced: add suspends every gate
		return
	}
	pool, release, err := c.conn(context.Background(), tenancy.ID{})
	if err != nil {
		return // no connection at all: every lookup fails, and denies
	}
	release()
	s.listening, s.prefix, s.static = true, c.prefix, c.static
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.closers = append(c.closers, cancel)
	c.mu.Unlock()
	go s.run(ctx, pool)
}

// run keeps a listening session open until ctx ends, suspending the gates
// whenever it is not in step.
func (s *gateSet) run(ctx context.Context, pool *pgxpool.Pool) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	beat := string(gateNoticeBeat) + hex.EncodeToString(nonce[:]) + "."
	wait := gateRetryMin
	for {
		synced, err := s.session(ctx, pool, beat)
		s.suspendAll()
		if ctx.Err() != nil || errors.Is(err, errGatePoolTooSmall) {
			return
		}
		if synced {
			wait = gateRetryMin
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, gateRetryMax)
	}
}

// session listens on one connection of pool, kept counted in the pool
// (never handed back: it listens) and closed when the session ends.
func (s *gateSet) session(ctx context.Context, pool *pgxpool.Pool, beat string) (synced bool, err error) {
	if pool.Config().MaxConns < 2 {
		return false, errGatePoolTooSmall
	}
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	conn := pc.Conn()
	defer func() {
		closeConn(ctx, conn)
		pc.Release() // closed: the pool destroys it, then frees its slot
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+gateChannel); err != nil {
		return false, err
	}
	for k := uint64(1); ; k++ {
		next := time.Now().Add(gateBeat)
		payload := beat + strconv.FormatUint(k, 10)
		wctx, cancel := context.WithTimeout(ctx, gateBeatWait)
		_, err := conn.Exec(wctx, "SELECT pg_catalog.pg_notify($1, $2)", gateChannel, payload)
		if err == nil {
			err = s.drain(wctx, conn, payload)
		}
		cancel()
		if err != nil {
			return synced, err
		}
		synced = true
		s.resumeAll()
		ictx, cancel := context.WithDeadline(ctx, next)
		err = s.drain(ictx, conn, "")
		cancel()
		if ctx.Err() != nil {
			return synced, ctx.Err()
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return synced, err
		}
	}
}

// drain applies the notices that arrive until ctx ends, or until the
// heartbeat until when it is set.
func (s *gateSet) drain(ctx context.Context, conn *pgx.Conn, until string) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel != gateChannel {
			continue
		}
		if until != "" && n.Payload == until {
			return nil
		}
		s.apply(n.Payload)
	}
}

// apply forgets what a notice names: the id in every gate over its table,
// or every id of its tenant. A notice it cannot read drops every cached
// positive.
func (s *gateSet) apply(payload string) {
	n, ok := parseGateNotice(payload)
	if ok && n.kind == gateNoticeBeat {
		return
	}
	s.mu.Lock()
	synced := s.synced // only the listener, which runs apply, changes it
	s.mu.Unlock()
	s.each(func(table naming.Name, col string, g *ownership.Gate) {
		switch {
		case !ok:
			g.Suspend()
			if synced {
				g.Resume()
			}
		case n.kind == gateNoticeTenant:
			g.ForgetTenant(n.tenant)
		case (n.col == "" || n.col == col) && ident(table, s.prefix, s.static, n.tenant).Sanitize() == n.table:
			g.Forget(n.tenant, n.id)
		}
	})
}

// suspendAll suspends every gate until the listener is in step again.
func (s *gateSet) suspendAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.synced = false
	for _, b := range s.gates {
		if g := b.gate.Value(); g != nil {
			g.Suspend()
		}
	}
}

// resumeAll resumes the gates once the listener is in step.
func (s *gateSet) resumeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.synced {
		return
	}
	s.synced = true
	for _, b := range s.gates {
		if g := b.gate.Value(); g != nil {
			g.Resume()
		}
	}
}

// Forget tells every ownership gate over table that tenant's id left it:
// the client's own gates at once, and on a plain client every other
// client's of the database (other replicas) through the invalidation
// channel. Call it after a delete or move of your own commits; the gates
// of Documents.Delete and Teardown are told already. An error means the
// other clients may not have been told: retry it.
func (c *Client) Forget(ctx context.Context, table naming.Name, tenant tenancy.ID, id string) error {
	if v := gateSetOf(c); v != nil {
		v.each(func(t naming.Name, _ string, g *ownership.Gate) {
			if t == table {
				g.Forget(tenant, id)
			}
		})
	}
	if c.routed != nil {
		return nil
	}
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	_, err = pool.Exec(ctx, "SELECT pg_catalog.pg_notify($1, $2)", gateChannel,
		gateIDNotice(ident(table, c.prefix, c.static, tenant).Sanitize(), "", tenant, id))
	return err
}
