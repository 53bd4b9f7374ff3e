// Package ratio measures the performance pairs of docs/performance.md the
// only way that counts on shared machines: ours and the baseline side by
// side in one run, interleaved, the median of per-round ratios. It prints
// "ratio <label>-<name> <ours/baseline>" lines for `make bench`.
package ratio

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// Pair is one measured comparison.
type Pair struct {
	Label    string // the pair's label in docs/performance.md, such as "P1"
	Name     string // such as "pg-tagged-get"
	Ours     func(n int)
	Baseline func(n int)
	// Rounds defaults to 7; Iterations per side per round defaults to 200.
	Rounds, Iterations int
}

// Result is a measured pair.
type Result struct {
	Pair   Pair
	Median float64
	Rounds []float64
	// OursNs and BaseNs are the median cost of one operation of each side
	// over the rounds: absolute, so noisy, but what a plot against scale
	// needs.
	OursNs, BaseNs float64
}

// Enabled reports whether ratio benchmarks were asked for (make bench sets
// TENANTWIRE_BENCH=1); they are too slow and noisy for the default run.
func Enabled() bool { return os.Getenv("TENANTWIRE_BENCH") == "1" }

// SkipUnlessEnabled skips the test, saying why, when ratios were not asked for.
func SkipUnlessEnabled(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("ratio benchmark: run with `make bench` (TENANTWIRE_BENCH=1)")
	}
}

// Measure runs the pair: one warm-up of each side, then rounds in which the
// two sides alternate which goes first.
func Measure(p Pair) Result {
	if p.Rounds <= 0 {
		p.Rounds = 7
	}
	if p.Iterations <= 0 {
		p.Iterations = 200
	}
	p.Ours(p.Iterations / 10)
	p.Baseline(p.Iterations / 10)
	res := Result{Pair: p}
	var oursNs, baseNs []float64
	for i := range p.Rounds {
		var ours, base time.Duration
		if i%2 == 0 {
			ours, base = timed(p.Ours, p.Iterations), timed(p.Baseline, p.Iterations)
		} else {
			base, ours = timed(p.Baseline, p.Iterations), timed(p.Ours, p.Iterations)
		}
		res.Rounds = append(res.Rounds, float64(ours)/float64(base))
		oursNs = append(oursNs, float64(ours)/float64(p.Iterations))
		baseNs = append(baseNs, float64(base)/float64(p.Iterations))
	}
	res.Median = median(res.Rounds)
	res.OursNs, res.BaseNs = median(oursNs), median(baseNs)
	return res
}

func median(v []float64) float64 {
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// timed collects garbage first, so one side's garbage is not billed to the
// other.
func timed(f func(int), n int) time.Duration {
	runtime.GC()
	start := time.Now()
	f(n)
	return time.Since(start)
}

// Print writes the line make bench collects.
func (r Result) Print(w io.Writer) {
	fmt.Fprintf(w, "ratio %s-%s %.2f\n", r.Pair.Label, r.Pair.Name, r.Median)
}

// PrintCost writes the per-operation costs of both sides, the line a plot
// against scale reads.
func (r Result) PrintCost(w io.Writer) {
	fmt.Fprintf(w, "scale-cost %s-%s ours_ns=%.0f base_ns=%.0f\n", r.Pair.Label, r.Pair.Name, r.OursNs, r.BaseNs)
}

// Inform measures the pair and prints its ratio line like Report, for a
// pair kept as information: it has no target.
func Inform(t testing.TB, p Pair) Result {
	t.Helper()
	r := Measure(p)
	r.Print(os.Stdout)
	t.Logf("%s-%s: median %.3f over %d rounds %v; information, no target", p.Label, p.Name, r.Median, len(r.Rounds), r.Rounds)
	return r
}

// ReportScale is Report followed by the pair's scale-cost line.
func ReportScale(t testing.TB, p Pair, target float64) Result {
	t.Helper()
	r := Report(t, p, target)
	r.PrintCost(os.Stdout)
	return r
}

// Report measures the pair, prints its ratio line to stdout, and logs how
// it compares with the target (a ratio over target is reported, not
// failed: absolute timings on shared machines are noise).
func Report(t testing.TB, p Pair, target float64) Result {
	t.Helper()
	r := Measure(p)
	r.Print(os.Stdout)
	verdict := "meets"
	if r.Median > target {
		verdict = "MISSES"
	}
	t.Logf("%s-%s: median %.3f over %d rounds %v; %s target <= %.2f", p.Label, p.Name, r.Median, len(r.Rounds), r.Rounds, verdict, target)
	return r
}

// Cycle returns a counter of the indexes 0 to n-1 in turn, wrapping, that
// carries on from one call of a side to the next: a side of a scale pair
// reads tenant next() so that its rounds walk every tenant. A side that
// restarted at tenant 0 each round would, with fewer iterations than
// tenants, read only the first few, and every cache would hold them.
func Cycle(n int) (next func() int) {
	i := -1
	return func() int {
		if i++; i == n {
			i = 0
		}
		return i
	}
}
