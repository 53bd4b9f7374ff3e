package ratio

import (
	"bytes"
	"fmt"
	"testing"
)

// Measure runs every round of both sides and reports the median ratio and
// per-operation costs; the sides' work is counted, not timed, so the test
// does not depend on the machine's load.
func TestMeasureRunsEveryRound(t *testing.T) {
	var ours, base int
	r := Measure(Pair{Label: "S1", Name: "x", Rounds: 5, Iterations: 40,
		Ours: func(n int) { ours += n }, Baseline: func(n int) { base += n }})
	if want := 4 + 5*40; ours != want || base != want {
		t.Fatalf("ran %d and %d operations, want %d each (warm-up and rounds)", ours, base, want)
	}
	if len(r.Rounds) != 5 || r.OursNs <= 0 || r.BaseNs <= 0 {
		t.Fatalf("result %+v", r)
	}
}

func TestMedianAndLines(t *testing.T) {
	if m := median([]float64{3, 1, 2, 9, 5}); m != 3 {
		t.Errorf("median = %v, want 3", m)
	}
	in := []float64{2, 1}
	_ = median(in)
	if in[0] != 2 {
		t.Error("median sorted its argument in place")
	}
	r := Result{Pair: Pair{Label: "S10000", Name: "pg-x-vs-y"}, Median: 0.9512, OursNs: 1234.4, BaseNs: 1300.6}
	var b bytes.Buffer
	r.Print(&b)
	r.PrintCost(&b)
	want := "ratio S10000-pg-x-vs-y 0.95\nscale-cost S10000-pg-x-vs-y ours_ns=1234 base_ns=1301\n"
	if b.String() != want {
		t.Errorf("lines = %q, want %q", b.String(), want)
	}
}

func TestCycleCarriesOn(t *testing.T) {
	next := Cycle(3)
	var got []int
	for range 7 {
		got = append(got, next())
	}
	if fmt.Sprint(got) != "[0 1 2 0 1 2 0]" {
		t.Fatalf("Cycle(3) gave %v", got)
	}
}
