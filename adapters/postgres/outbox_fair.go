package postgres

import (
	"context"
	"encoding/hex"
	"sync"

	"github.com/jackc/pgx/v5"
)

// A tenant-global claim serves the tenants with pending rows in turn, so
// that one tenant's backlog never fills every batch ahead of another
// tenant's next row. It walks the tenants with pending rows through the
// partial index on (tenant_id, id) (one index probe per tenant, whatever
// their backlogs), from the tenant after the last one served, takes each
// one's oldest rows, an equal share of the batch each, ranked first row
// of every tenant, then second, and so on, and locks them. A tenant's own
// rows stay in id order.

// fairClaimSQL picks the candidate row ids of tenants in [$2, $3] (uuid
// hex), at most $1 tenants and $1 rows, leaving out the tenants in $4;
// each row with its tenant.
func fairClaimSQL(t string) string {
	pending := " FROM " + t + " WHERE delivered_at IS NULL"
	return "WITH RECURSIVE heads(tenant_id, n) AS (" +
		"(SELECT tenant_id, 1" + pending + " AND tenant_id >= $2::uuid AND tenant_id <= $3::uuid ORDER BY tenant_id LIMIT 1)" +
		" UNION ALL SELECT (SELECT o.tenant_id FROM " + t + " o WHERE o.delivered_at IS NULL AND o.tenant_id > h.tenant_id AND o.tenant_id <= $3::uuid ORDER BY o.tenant_id LIMIT 1), h.n + 1" +
		" FROM heads h WHERE h.tenant_id IS NOT NULL AND h.n < $1)," +
		" live AS (SELECT tenant_id, n FROM heads WHERE tenant_id IS NOT NULL AND tenant_id <> ALL($4::uuid[]))," +
		" share AS (SELECT greatest(1, ceil($1::numeric / greatest(count(*), 1)))::int AS k FROM live)" +
		" SELECT c.id, h.tenant_id FROM live h CROSS JOIN LATERAL (SELECT id, row_number() OVER (ORDER BY id) AS rn" + pending +
		" AND tenant_id = h.tenant_id ORDER BY id LIMIT (SELECT k FROM share)) c ORDER BY c.rn, h.n LIMIT $1"
}

// fairLockSQL locks the picked rows still pending and free.
func fairLockSQL(t string) string {
	return "SELECT id, tenant_id, event_id, topic, key, payload, headers FROM " + t +
		" WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL FOR UPDATE SKIP LOCKED"
}

// fairCursor is where the next tenant-global claim starts: after the last
// tenant a claim served.
type fairCursor struct {
	mu   sync.Mutex
	next [16]byte
}

var maxUUID = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// fairPick returns the ids to claim, in delivery order: from the cursor to
// the last tenant, then, if the batch is not full, from the first tenant
// up to the cursor.
func (o *Outbox) fairPick(ctx context.Context, tx pgx.Tx, st *outboxStmts, limit int, skip []string) ([]int64, error) {
	o.cursor.mu.Lock()
	from := o.cursor.next
	o.cursor.mu.Unlock()
	if skip == nil {
		skip = []string{}
	}
	var ids []int64
	var last [16]byte
	served := false
	ranges := [][2][16]byte{{from, maxUUID}}
	if from != ([16]byte{}) {
		ranges = append(ranges, [2][16]byte{{}, before(from)})
	}
	for _, r := range ranges {
		if len(ids) >= limit {
			break
		}
		rows, err := tx.Query(ctx, st.fairPick, st.mode([]any{limit - len(ids), hexOf(r[0]), hexOf(r[1]), skip})...)
		if err != nil {
			return nil, err
		}
		var id int64
		var tb [16]byte
		var passMax [16]byte
		n := 0
		_, err = pgx.ForEachRow(rows, []any{&id, &tb}, func() error {
			ids = append(ids, id)
			if n == 0 || string(tb[:]) > string(passMax[:]) {
				passMax = tb
			}
			n++
			return nil
		})
		if err != nil {
			return nil, err
		}
		if n > 0 {
			last, served = passMax, true
		}
	}
	if served {
		o.cursor.mu.Lock()
		o.cursor.next = after(last)
		o.cursor.mu.Unlock()
	}
	return ids, nil
}

func hexOf(b [16]byte) string { return hex.EncodeToString(b[:]) }

// after is the UUID that follows b (wrapping to zero after the last).
func after(b [16]byte) [16]byte {
	for i := 15; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			break
		}
	}
	return b
}

// before is the UUID that precedes b (b is not zero).
func before(b [16]byte) [16]byte {
	for i := 15; i >= 0; i-- {
		b[i]--
		if b[i] != 0xff {
			break
		}
	}
	return b
}
