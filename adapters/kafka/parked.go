package kafka

import (
	"context"
	"errors"
	"fmt"
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
}

type partition struct {
	topic string
	n     int
}

// partLog is one partition's records fetched and not yet committed, in
// offset order, and the next offset expected (lower ones are refetches
// after a rebalance: already handled or held here).
type partLog struct {
	recs []*record
	next int64
}

type record struct {
	m    kafkago.Message
	done bool
}

func newParkedLoop(w *worker, sh shard) *parkedLoop {
	n := w.spec.cfg.MaxHeld
	if n <= 0 {
		n = 1000
	}
	return &parkedLoop{w: w, sh: sh, park: shards.NewParking(w.wc.Backoff, w.wc.MaxBackoff),
		parts: map[partition]*partLog{}, held: map[tenancy.ID][]*record{}, max: n}
}

// run fetches under fetch and handles and commits under ctx; when fetch
// ends it commits what is safe and returns, leaving held records
// uncommitted for the next owner of their partitions.
func (l *parkedLoop) run(ctx, fetch context.Context) {
	for {
		l.retryDue(ctx)
		l.commit(ctx)
		if fetch.Err() != nil || ctx.Err() != nil {
			return
		}
		_, next := l.park.Skip(time.Now())
		if l.nHeld >= l.max {
			// Full: handle no new records until a parked tenant's go through.
			if !shards.Sleep(fetch, nil, max(time.Until(next), time.Millisecond)) {
				l.commit(ctx)
				return
			}
			continue
		}
		fctx, cancel := fetch, context.CancelFunc(func() {})
		if l.nHeld > 0 && !next.IsZero() {
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
				continue // a parked tenant is due
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
		return // refetched after a rebalance: handled or held already
	}
	log.next = m.Offset + 1
	r := &record{m: m}
	log.recs = append(log.recs, r)
	tenant := l.tenantOf(m)
	if len(l.held[tenant]) > 0 || l.park.Parked(tenant, time.Now()) {
		l.hold(tenant, r)
		return
	}
	if !l.attempt(ctx, tenant, r) {
		l.hold(tenant, r)
	}
}

func (l *parkedLoop) hold(tenant tenancy.ID, r *record) {
	l.held[tenant] = append(l.held[tenant], r)
	l.nHeld++
}

// tenantOf is the parking key of m: its header's tenant, or zero for a
// record dead-lettered for its header.
func (l *parkedLoop) tenantOf(m kafkago.Message) tenancy.ID {
	id, _ := TenantFromHeaders(m.Headers)
	return id
}

// attempt handles r once: true when it went through (its tenant is then
// unparked), false when it failed (its tenant is parked).
func (l *parkedLoop) attempt(ctx context.Context, tenant tenancy.ID, r *record) bool {
	err := l.w.once(ctx, l.sh.tenant, r.m)
	if err == nil {
		r.done = true
		l.park.Ok(tenant)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	wait, fails := l.park.Fail(tenant, time.Now())
	l.w.report(tenant, fmt.Errorf("handle %s/%d@%d (attempt %d; tenant parked %v, other tenants go on): %w",
		r.m.Topic, r.m.Partition, r.m.Offset, fails, wait, err))
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
			if !l.attempt(ctx, tenant, recs[0]) {
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
		if err := l.sh.reader.CommitMessages(ctx, log.recs[n-1].m); err != nil {
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
