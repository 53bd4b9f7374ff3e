package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

const sample = `=== RUN   TestRatioScaleNamespace
ratio S1-pg-namespace-get-vs-hand 0.950 [0.921, 0.978] n=31
scale-cost S1-pg-namespace-get-vs-hand ours_ns=100 base_ns=110
scale-cost S1-pg-namespace-get-vs-search-path ours_ns=120 base_ns=200
scale-cost S1000-pg-namespace-get-vs-hand ours_ns=130 base_ns=125
scale-cost S10000-redis-tagged-get ours_ns=80 base_ns=81
scale-cost S10000-broken ours_ns=x base_ns=1
scale-cost S10000-pg-tagged-get-vs-1-tenant ours_ns=210 base_ns=200
scale-cost S1000-kafka-sharded-consumer-start ours_ns=28000000000 base_ns=27000000000
`

func TestParseAndGroup(t *testing.T) {
	costs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) != 6 {
		t.Fatalf("parsed %d costs, want 6 (the malformed line skipped): %+v", len(costs), costs)
	}
	curves := series(costs)
	ours := curves["pg-namespace-get (ours)"]
	if len(ours) != 2 || ours[1] != 110 || ours[1000] != 130 {
		t.Errorf("route curve = %v, want the median of its measurements at each count", ours)
	}
	if got := curves["pg-namespace-get / search-path"]; len(got) != 1 || got[1] != 200 {
		t.Errorf("search-path curve = %v", got)
	}
	if got := curves["redis-tagged-get / hand-written"]; got[10000] != 81 {
		t.Errorf("a pair without -vs- is against the hand-written baseline: %v", curves)
	}
	if got := curves["pg-tagged-get (ours)"]; len(got) != 2 || got[1] != 200 || got[10000] != 210 {
		t.Errorf("the one-tenant pair is the route's own curve: %v", got)
	}
	if len(curves) != 6 { // the start-up pair is not a cost per operation
		t.Errorf("%d curves: %v", len(curves), curves)
	}
}

func TestDrawWritesPNG(t *testing.T) {
	costs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	p, err := draw1(series(costs))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "scale.png")
	if err := p.Save(10*vg.Centimeter, 8*vg.Centimeter, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 1000 {
		t.Fatalf("not a PNG of a plot: %d bytes", len(b))
	}
}
