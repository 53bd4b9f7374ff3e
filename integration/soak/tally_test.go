package soak_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/tenancy"
)

// tally is one sink's count over every tenant. A record is keyed by its
// stream and sequence number ("orders/17"); the tenant it was found under
// is compared with the tenant its body names.
type tally struct {
	sink      string
	sent      int
	delivered int
	missing   int
	duplicate int
	cross     int
	extra     int  // records under the right tenant that were never acknowledged
	dupOK     bool // before the inbox: redelivery is allowed
	noDup     bool // the sink cannot hold a record twice (a key holds one value)
	noCross   bool // the sink holds no body to compare (a counter)
	examples  []string
	took      time.Duration // how long reading the sink took
}

func (t *tally) note(format string, args ...any) {
	if len(t.examples) < 5 {
		t.examples = append(t.examples, fmt.Sprintf(format, args...))
	}
}

// tenant adds one tenant's records: want are the keys it wrote, seen
// what the sink holds under it (key → count, found only for records whose
// body names this tenant), cross how many records under it name another.
func (t *tally) tenant(id tenancy.ID, want []string, seen map[string]int, cross int) {
	t.sent += len(want)
	wanted := make(map[string]bool, len(want))
	for _, k := range want {
		wanted[k] = true
		switch n := seen[k]; n {
		case 0:
			t.missing++
			t.note("%s missing %s", id, k)
		default:
			t.delivered++
			if n > 1 {
				t.duplicate += n - 1
				if !t.dupOK {
					t.note("%s %s held %d times", id, k, n)
				}
			}
		}
	}
	for k := range seen {
		if !wanted[k] {
			t.extra++
			t.note("%s holds %s, never acknowledged", id, k)
		}
	}
	if cross > 0 {
		t.cross += cross
		t.note("%s holds %d records of other tenants", id, cross)
	}
}

// count adds a counter: it says how many, not which.
func (t *tally) count(id tenancy.ID, name string, want, got int) {
	t.sent += want
	t.delivered += min(want, got)
	if got < want {
		t.missing += want - got
		t.note("%s counter %s: %d of %d", id, name, got, want)
	}
	if got > want {
		t.duplicate += got - want
		t.note("%s counter %s: %d for %d records", id, name, got, want)
	}
}

func (t *tally) failed() bool {
	return t.missing > 0 || t.cross > 0 || t.extra > 0 || (t.duplicate > 0 && !t.dupOK)
}

func (t *tally) String() string {
	dup, cross := strconv.Itoa(t.duplicate), strconv.Itoa(t.cross)
	if t.noDup {
		dup = "n/a"
	}
	if t.noCross {
		cross = "n/a"
	}
	s := fmt.Sprintf("soak %s sent=%d delivered=%d missing=%d duplicate=%s cross_tenant=%s", t.sink, t.sent, t.delivered, t.missing, dup, cross)
	if t.dupOK {
		s += " (before the inbox: redelivery allowed)"
	}
	if t.extra > 0 {
		s += fmt.Sprintf(" unacknowledged=%d", t.extra)
	}
	s += fmt.Sprintf(" (read in %v)", t.took.Round(time.Millisecond))
	return s
}

func keys(stream string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = stream + "/" + strconv.Itoa(i+1)
	}
	return out
}

// records are the keys of a tenant's n requests in every stream.
func records(n int) []string {
	var out []string
	for _, st := range streams {
		out = append(out, keys(st, n)...)
	}
	return out
}

// bodyKey files a record: under its key when its body names owner, else
// as cross-tenant.
func bodyKey(stream string, owner tenancy.ID, raw []byte, seen map[string]int) (cross bool, err error) {
	var b Body
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, err
	}
	return file(stream, owner, b, seen), nil
}

func file(stream string, owner tenancy.ID, b Body, seen map[string]int) bool {
	if b.Tenant != owner.String() {
		return true
	}
	seen[stream+"/"+strconv.Itoa(b.Seq)]++
	return false
}

// raw files rows of (tenant_id, json body) by the tenant column.
func raw(rows pgx.Rows, stream string) (map[tenancy.ID]map[string]int, map[tenancy.ID]int, error) {
	byTenant, cross := map[tenancy.ID]map[string]int{}, map[tenancy.ID]int{}
	var tb [16]byte
	var body []byte
	_, err := pgx.ForEachRow(rows, []any{&tb, &body}, func() error {
		id, _ := tenancy.IDFromBytes(tb)
		if byTenant[id] == nil {
			byTenant[id] = map[string]int{}
		}
		c, err := bodyKey(stream, id, body, byTenant[id])
		if c {
			cross[id]++
		}
		return err
	})
	return byTenant, cross, err
}
