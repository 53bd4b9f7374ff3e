package kafka

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestLeftRecordsGoneFromTheBrokerNoLongerHoldTheCommit: records left
// behind a parked tenant that the broker dropped before they were read
// again (the reader skipped from 2 to 5) are reported, forgotten, and
// marked so that the partition's commit can pass them; left records
// outside the skipped range stay.
func TestLeftRecordsGoneFromTheBrokerNoLongerHoldTheCommit(t *testing.T) {
	var reported []string
	w := &worker{spec: &consumerSpec{cfg: ConsumerConfig{Name: "c"}},
		wc: shards.WorkerConfig{OnError: func(err error) { reported = append(reported, err.Error()) }}}
	l := newParkedLoop(w, shard{})
	a, b := tenancytest.TenantA, tenancytest.TenantB
	p := partition{"t", 0}
	log := &partLog{next: 8}
	for off := range int64(8) {
		log.recs = append(log.recs, &record{off: off, done: off == 0 || off == 1})
	}
	l.parts[p] = log
	l.left[a] = map[partition][]int64{p: {2, 4, 6}}
	l.left[b] = map[partition][]int64{p: {3, 7}}
	l.nLeft[a], l.nLeft[b] = 3, 2
	l.gone(p, log, 2, 5)
	if got := l.left[a][p]; len(got) != 1 || got[0] != 6 || l.nLeft[a] != 1 {
		t.Errorf("A's left records %v (%d), want [6]", got, l.nLeft[a])
	}
	if got := l.left[b][p]; len(got) != 1 || got[0] != 7 || l.nLeft[b] != 1 {
		t.Errorf("B's left records %v (%d), want [7]", got, l.nLeft[b])
	}
	for _, r := range log.recs {
		if r.done != (r.off <= 4) {
			t.Errorf("record %d done=%v", r.off, r.done)
		}
	}
	if len(reported) != 2 || !strings.Contains(reported[0], "gone from the broker") {
		t.Errorf("reported %q, want one report per tenant", reported)
	}
	l.gone(p, log, 6, 8)
	if len(l.left) != 0 || len(l.nLeft) != 0 {
		t.Errorf("after the rest went: left %v, counts %v", l.left, l.nLeft)
	}
}
