package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// parkedLoop drains a TenantFromHeaders reader, whose partitions carry
// many tenants' records, by the rule of shards.Parking: a record whose
// handler fails parks its tenant; that tenant's later records (on any
// partition) are held behind it, in order, while other tenants' records
// are handled. A parked tenant's held records are retried, oldest first,
// when its backoff ends.
//
// At most max records are held in memory. A blocked tenant's records past
// that are left on the broker, uncommitted, with their offsets noted; once
// the tenant is no longer blocked they are read again from the broker by a
// reader of their partition, outside the group, in order, and handled. So
// a tenant's backlog never stops the fetch for the others, and memory is a
// few words per record not yet committed.
//
// A healthy tenant's backlog takes turns too: after Turn of its
// records in a row, straight from the fetch, its later ones are left the
// same way and the fetch reads ahead (up to MaxAhead records) to the other
// tenants' records, which are handled as they come; then the left ones are
// read again.
//
// Kafka commits one offset per partition, so a partition's offset is
// committed only up to its earliest record not handled yet: records of
// other tenants handled after it are handled again (at least once) if the
// consumer restarts, or loses the partition, before the parked one goes
// through.
type parkedLoop struct {
	w     *worker
	sh    shard
	park  *shards.Parking
	parts map[partition]*partLog
	held  map[tenancy.ID][]*record // per tenant, in fetch order
	nHeld int
	max   int
	// left: per tenant and partition, the offsets of its records left on
	// the broker past the hold, in order; nLeft counts them per tenant.
	left  map[tenancy.ID]map[partition][]int64
	nLeft map[tenancy.ID]int
	// again reads a partition's left records again.
	again map[partition]*rereader
	// streak counts the records of one tenant handled in a row as they
	// were fetched, each with records behind it on its partition; past
	// turn the tenant's later records are left too and the fetch reads
	// ahead of them (ahead, on aheadOn's partition, for at most l.aheadMax
	// records) to the other tenants'.
	streakOf  tenancy.ID
	streak    int
	ahead     bool
	aheadOn   partition // the backlog's partition
	aheadRead int
	turn      int // ConsumerConfig.Turn
	aheadMax  int // ConsumerConfig.MaxAhead
}

type partition struct {
	topic string
	n     int
}

// partLog is one partition's records fetched and not yet committed, in
// offset order, and the next offset expected (lower ones are refetches
// after a rebalance: already handled, held or left here).
type partLog struct {
	recs []*record
	next int64
}

// record is one fetched record's state: m is kept only while it is held.
type record struct {
	off  int64
	m    *kafkago.Message
	done bool
}

// rereader reads a partition's left records again; next is the offset it
// returns next.
type rereader struct {
	r    *kafkago.Reader
	next int64
}

// againTurn is how many left records one turn of the loop handles per
// partition before fetching again, so a tenant whose backlog is read again
// delays another tenant's next record by at most that many.
const againTurn = 10

// againRead bounds the records one turn reads again per partition (those
// of other tenants, handled already, are passed over).
const againRead = 1000

// The defaults of ConsumerConfig.Turn (records of one tenant in a row the
// loop handles from a backlog before it leaves that tenant's later ones on
// the broker and reads ahead for the other tenants') and MaxAhead (where
// reading ahead ends, if not at the partition's end). aheadIdle is how long
// reading ahead waits for a fetch before it takes the partition as gone.
const (
	fairTurn  = 100
	aheadMax  = 100_000
	aheadIdle = time.Second
)

func newParkedLoop(w *worker, sh shard) *parkedLoop {
	n := w.spec.cfg.MaxHeld
	if n <= 0 {
		n = 1000
	}
	turn, ahead := w.spec.cfg.Turn, w.spec.cfg.MaxAhead
	if turn <= 0 {
		turn = fairTurn
	}
	if ahead <= 0 {
		ahead = aheadMax
	}
	return &parkedLoop{w: w, sh: sh, park: shards.NewParking(w.wc.Backoff, w.wc.MaxBackoff), turn: turn, aheadMax: ahead,
		parts: map[partition]*partLog{}, held: map[tenancy.ID][]*record{}, max: n,
		left: map[tenancy.ID]map[partition][]int64{}, nLeft: map[tenancy.ID]int{}, again: map[partition]*rereader{}}
}

// run fetches under fetch and handles and commits under ctx; when fetch
// ends it commits what is safe and returns, leaving held and left records
// uncommitted for the next owner of their partitions.
func (l *parkedLoop) run(ctx, fetch context.Context) {
	defer l.closeAgain()
	for {
		l.retryDue(ctx)
		more := l.readAgain(ctx, fetch)
		l.commit(ctx)
		if fetch.Err() != nil || ctx.Err() != nil {
			return
		}
		_, next := l.park.Skip(time.Now())
		fctx, cancel := fetch, context.CancelFunc(func() {})
		switch {
		case more:
			// Left records wait to be read again: do not block on the fetch.
			fctx, cancel = context.WithTimeout(fetch, time.Millisecond)
		case l.ahead:
			// Reading ahead ends at the partition's last record (take), or
			// when nothing comes for a while (the partition went to another
			// consumer): not at the first slow fetch of a loaded machine.
			fctx, cancel = context.WithTimeout(fetch, max(aheadIdle, 4*l.w.maxWait()))
		case (l.nHeld > 0 || len(l.nLeft) > 0) && !next.IsZero():
			fctx, cancel = context.WithDeadline(fetch, next)
		}
		m, err := l.sh.reader.FetchMessage(fctx)
		cancel()
		if err != nil {
			if fetch.Err() != nil {
				l.commit(ctx)
				return
			}
			if errors.Is(err, context.DeadlineExceeded) && fctx.Err() != nil {
				// Caught up (or a parked tenant is due): no backlog to take
				// turns in.
				l.ahead, l.streak = false, 0
				continue
			}
			l.w.report(tenancy.ID{}, fmt.Errorf("fetch: %w", err))
			if !shards.Sleep(ctx, nil, l.w.retry()) {
				return
			}
			continue
		}
		l.take(ctx, m)
	}
}

// take handles a fetched record, or holds it behind its parked tenant.
func (l *parkedLoop) take(ctx context.Context, m kafkago.Message) {
	p := partition{m.Topic, m.Partition}
	log := l.parts[p]
	if log == nil {
		log = &partLog{next: m.Offset}
		l.parts[p] = log
	}
	if m.Offset < log.next {
		return // refetched after a rebalance: handled, held or left already
	}
	log.next = m.Offset + 1
	r := &record{off: m.Offset}
	log.recs = append(log.recs, r)
	tenant := l.tenantOf(m)
	// The last record the partition had when it was fetched: no backlog
	// behind it, so no turns to take.
	last := m.Offset+1 >= m.HighWaterMark
	if l.ahead {
		if l.aheadRead++; l.aheadRead >= l.aheadMax || (last && p == l.aheadOn) {
			l.ahead = false
		}
	}
	if l.blocked(tenant, time.Now()) || l.nLeft[tenant] > 0 {
		l.hold(tenant, p, r, m)
		return
	}
	if tenant != l.streakOf || last {
		l.streakOf, l.streak = tenant, 0
	}
	if l.streak >= l.turn {
		// A backlog's turn is over: leave the rest of it, read ahead.
		l.leave(tenant, p, r)
		l.ahead, l.aheadOn, l.aheadRead, l.streak = true, p, 0, 0
		return
	}
	l.streak++
	if !l.attempt(ctx, tenant, r, m) {
		l.hold(tenant, p, r, m)
	}
}

// blocked reports whether tenant's records must wait: it is parked, or has
// records held.
func (l *parkedLoop) blocked(tenant tenancy.ID, now time.Time) bool {
	return len(l.held[tenant]) > 0 || l.park.Parked(tenant, now)
}

// hold keeps r in memory behind its tenant, or, past the bound (or behind
// the tenant's records already left), leaves it on the broker.
func (l *parkedLoop) hold(tenant tenancy.ID, p partition, r *record, m kafkago.Message) {
	if l.nLeft[tenant] == 0 && l.nHeld < l.max {
		r.m = &m
		l.held[tenant] = append(l.held[tenant], r)
		l.nHeld++
		return
	}
	l.leave(tenant, p, r)
}

// leave leaves r on the broker, to be read again in its tenant's order.
func (l *parkedLoop) leave(tenant tenancy.ID, p partition, r *record) {
	if l.left[tenant] == nil {
		l.left[tenant] = map[partition][]int64{}
	}
	l.left[tenant][p] = append(l.left[tenant][p], r.off)
	l.nLeft[tenant]++
}

// tenantOf is the parking key of m: its header's tenant, or zero for a
// record dead-lettered for its header.
func (l *parkedLoop) tenantOf(m kafkago.Message) tenancy.ID {
	id, _ := TenantFromHeaders(m.Headers)
	return id
}

// attempt handles m, the record r, once: true when it went through (its
// tenant is then unparked), false when it failed (its tenant is parked).
func (l *parkedLoop) attempt(ctx context.Context, tenant tenancy.ID, r *record, m kafkago.Message) bool {
	err := l.w.once(ctx, l.sh.tenant, m)
	if err == nil {
		r.done, r.m = true, nil
		l.park.Ok(tenant)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	wait, fails := l.park.Fail(tenant, time.Now())
	l.w.report(tenant, fmt.Errorf("handle %s/%d@%d (attempt %d; tenant parked %v, other tenants go on): %w",
		m.Topic, m.Partition, m.Offset, fails, wait, err))
	return false
}

// retryDue retries the held records of every tenant whose backoff ended,
// oldest first, until one fails again.
func (l *parkedLoop) retryDue(ctx context.Context) {
	now := time.Now()
	for tenant, recs := range l.held {
		if l.park.Parked(tenant, now) {
			continue
		}
		for len(recs) > 0 && ctx.Err() == nil {
			if !l.attempt(ctx, tenant, recs[0], *recs[0].m) {
				break
			}
			recs = recs[1:]
			l.nHeld--
		}
		if len(recs) == 0 {
			delete(l.held, tenant)
		} else {
			l.held[tenant] = recs
		}
	}
}

// readAgain reads again, on each partition with left records of a tenant
// no longer blocked, up to againTurn of them, and handles them in order. It
// reports whether such records still wait.
func (l *parkedLoop) readAgain(ctx, fetch context.Context) bool {
	more := false
	now := time.Now()
	for p, rr := range l.again {
		if _, ok := l.parts[p]; !ok || !l.anyLeft(p) {
			_ = rr.r.Close()
			delete(l.again, p)
		}
	}
	for p, log := range l.parts {
		lo, ok := l.dueOn(p, now)
		if !ok {
			continue
		}
		rr := l.again[p]
		if rr == nil {
			rr = &rereader{r: l.sh.part(p.topic, p.n), next: -1}
			l.again[p] = rr
		}
		if rr.next < 0 || lo < rr.next {
			if err := rr.r.SetOffset(lo); err != nil {
				l.w.report(tenancy.ID{}, fmt.Errorf("read %s/%d again from %d: %w", p.topic, p.n, lo, err))
				continue
			}
			rr.next = lo
		}
		handled := 0
		for read := 0; handled < againTurn && read < againRead && rr.next < log.next && ctx.Err() == nil; read++ {
			rctx, cancel := context.WithTimeout(fetch, l.w.maxWait())
			m, err := rr.r.FetchMessage(rctx)
			cancel()
			if err != nil {
				if fetch.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
					l.w.report(tenancy.ID{}, fmt.Errorf("read %s/%d again at %d: %w", p.topic, p.n, rr.next, err))
					// The broker is failing: back off rather than spin.
					shards.Sleep(fetch, nil, l.w.retry())
				}
				break
			}
			if m.Offset > rr.next {
				l.gone(p, log, rr.next, m.Offset)
			}
			rr.next = m.Offset + 1
			if l.takeAgain(ctx, p, log, m) {
				handled++
			}
		}
		if _, ok := l.dueOn(p, time.Now()); ok {
			more = true
		}
	}
	return more
}

// takeAgain handles m, read again, when it is the first left record of a
// tenant no longer blocked; it reports whether it tried.
func (l *parkedLoop) takeAgain(ctx context.Context, p partition, log *partLog, m kafkago.Message) bool {
	tenant := l.tenantOf(m)
	offs := l.left[tenant][p]
	if len(offs) == 0 || offs[0] != m.Offset || l.blocked(tenant, time.Now()) {
		return false
	}
	i, found := slices.BinarySearchFunc(log.recs, m.Offset, func(r *record, off int64) int { return cmp.Compare(r.off, off) })
	if !found {
		return false
	}
	if !l.attempt(ctx, tenant, log.recs[i], m) {
		return true // still left: its tenant is parked again
	}
	if offs = offs[1:]; len(offs) > 0 {
		l.left[tenant][p] = offs
	} else if delete(l.left[tenant], p); len(l.left[tenant]) == 0 {
		delete(l.left, tenant)
	}
	if l.nLeft[tenant]--; l.nLeft[tenant] == 0 {
		delete(l.nLeft, tenant)
	}
	return true
}

// gone forgets the left records on p in [from, to): the broker no longer
// has them (retention or compaction removed them before they were read
// again, and the reader skipped ahead). They are reported and, since
// nothing can handle them now, no longer hold the partition's commit.
func (l *parkedLoop) gone(p partition, log *partLog, from, to int64) {
	for tenant, parts := range l.left {
		offs := parts[p]
		i, _ := slices.BinarySearch(offs, from)
		j, _ := slices.BinarySearch(offs, to)
		if i == j {
			continue
		}
		for _, off := range offs[i:j] {
			if k, ok := slices.BinarySearchFunc(log.recs, off, func(r *record, off int64) int { return cmp.Compare(r.off, off) }); ok {
				log.recs[k].done = true
			}
		}
		l.w.report(tenant, fmt.Errorf("%d records of %s/%d in [%d, %d) left behind a parked tenant are gone from the broker before they were read again; not handled",
			j-i, p.topic, p.n, from, to))
		l.nLeft[tenant] -= j - i
		if offs = slices.Delete(offs, i, j); len(offs) > 0 {
			parts[p] = offs
		} else if delete(parts, p); len(parts) == 0 {
			delete(l.left, tenant)
		}
		if l.nLeft[tenant] == 0 {
			delete(l.nLeft, tenant)
		}
	}
}

// dueOn is the lowest offset on p of a left record whose tenant is no
// longer blocked; none while the fetch reads ahead.
func (l *parkedLoop) dueOn(p partition, now time.Time) (int64, bool) {
	if l.ahead {
		return 0, false // reading ahead first
	}
	var lo int64
	ok := false
	for tenant, parts := range l.left {
		offs := parts[p]
		if len(offs) == 0 || (ok && offs[0] >= lo) || l.blocked(tenant, now) {
			continue
		}
		lo, ok = offs[0], true
	}
	return lo, ok
}

// anyLeft reports whether p has left records.
func (l *parkedLoop) anyLeft(p partition) bool {
	for _, parts := range l.left {
		if len(parts[p]) > 0 {
			return true
		}
	}
	return false
}

func (l *parkedLoop) closeAgain() {
	for p, rr := range l.again {
		_ = rr.r.Close()
		delete(l.again, p)
	}
}

// commit commits each partition up to its last record with none before it
// left to handle, and forgets the committed records.
func (l *parkedLoop) commit(ctx context.Context) {
	for p, log := range l.parts {
		n := 0
		for n < len(log.recs) && log.recs[n].done {
			n++
		}
		if n == 0 {
			continue
		}
		last := kafkago.Message{Topic: p.topic, Partition: p.n, Offset: log.recs[n-1].off}
		if err := l.sh.reader.CommitMessages(ctx, last); err != nil {
			if ctx.Err() == nil {
				l.w.report(tenancy.ID{}, fmt.Errorf("commit %s/%d: %w", p.topic, p.n, err))
			}
			continue // retried on the next turn
		}
		log.recs = log.recs[n:]
		if len(log.recs) == 0 {
			delete(l.parts, p) // next is kept by the reader's own position
		}
	}
}

// once handles m one time, in a consumer span of its own as process does.
func (w *worker) once(ctx context.Context, tenant tenancy.ID, m kafkago.Message) (err error) {
	if w.route.tel != nil {
		id := tenant
		if id.IsZero() && w.spec.cfg.TenantFromHeaders {
			id, _ = TenantFromHeaders(m.Headers)
		}
		var span interface{ End(error) }
		ctx, span = w.route.tel.StartLinked(ctx, id, w.traceCarrier(m.Headers))
		defer func() { span.End(err) }()
	}
	_, call := w.bind(ctx, tenant, m)
	return call()
}
