// Package ratio measures the performance pairs of docs/performance.md the
// only way that counts on shared machines: ours and the baseline side by
// side in one run, interleaved, the median of per-round ratios with a
// bootstrap confidence interval. Rounds are added until the interval is
// narrow enough to tell a few percent, or a time cap is reached. It prints
// "ratio <label>-<name> <median> [<lo>, <hi>] n=<rounds>" lines for
// `make bench`.
package ratio

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// DefaultCap bounds the rounds of one pair (after its minimum) when
	// neither CapEnv nor Pair.Cap says otherwise.
	DefaultCap = 60 * time.Second
	// CapEnv overrides every pair's time cap for a run: a Go duration
	// ("90s", "5m") or a number of seconds.
	CapEnv = "TENANTWIRE_BENCH_CAP"
	// Precision is the stop rule's half-width: rounds are added until the
	// interval lies within ±3% of the median, narrow enough to tell a 5%
	// target from the noise.
	Precision = 0.03
	// Confidence is the interval's coverage.
	Confidence = 0.95
	// resamples of the bootstrap: 2,000 puts the 2.5th and 97.5th
	// percentiles on the 50th and 1,950th of them.
	resamples = 2000
	// maxRounds bounds a pair whose sides cost next to nothing, so that the
	// cap is not the only bound on its memory and bootstrap time.
	maxRounds = 10000
	// stopFloor is the fewest rounds whose interval the stop rule trusts.
	// A bootstrap of a median over a handful of rounds is coarse and, when
	// the rule stops at the first narrow one, misses the true ratio far
	// more often than 5%: over lognormal rounds spread 3% (400 runs of the
	// rule), 14% of intervals missed the true ratio with no floor, 5% with
	// 20; over rounds spread 6%, 14% and 9%.
	stopFloor = 20
	// The bootstrap's fixed seed: the interval is a function of the rounds
	// alone, so a logged run can be recomputed.
	seed1, seed2 = 0x7465_6e61_6e74, 0x7769_7265
)

// Pair is one measured comparison.
type Pair struct {
	Label    string // the pair's label in docs/performance.md, such as "P1"
	Name     string // such as "pg-tagged-get"
	Ours     func(n int)
	Baseline func(n int)
	// Rounds is the minimum number of rounds, 7 by default; Iterations per
	// side per round defaults to 200.
	Rounds, Iterations int
	// Cap bounds the time spent on rounds past the minimum; DefaultCap
	// when zero. CapEnv, when set, overrides it.
	Cap time.Duration
	// Step, when positive, splits each round into steps of Step operations
	// that alternate between the sides (ours, baseline, baseline, ours,
	// ...), each side's time the sum of its steps, so that the machine's
	// drifts slower than a step fall on both sides alike. A side then runs
	// Step operations per call and must carry its state from one call to
	// the next (see Cycle).
	Step int
}

// Result is a measured pair.
type Result struct {
	Pair   Pair
	Median float64
	// Lo and Hi bound the Confidence interval of Median, a percentile
	// bootstrap over Rounds.
	Lo, Hi float64
	Rounds []float64
	// OursNs and BaseNs are the median cost of one operation of each side
	// over the rounds: absolute, so noisy, but what a plot against scale
	// needs.
	OursNs, BaseNs float64
	// Elapsed is the time the rounds took; Capped says the time cap (or
	// maxRounds) ended them, not the stop rule: the interval may then be
	// wider than ±Precision, or rest on fewer rounds than the rule trusts.
	Elapsed time.Duration
	Capped  bool
}

// Precise reports whether the interval lies within ±Precision of the
// median: the stop rule's condition.
func (r Result) Precise() bool { return precise(r.Median, r.Lo, r.Hi) }

func precise(med, lo, hi float64) bool {
	return lo >= med*(1-Precision) && hi <= med*(1+Precision)
}

// Verdict compares the interval with a target ratio: "meets" only when the
// whole interval is under it, "MISSES" when the whole interval is over it,
// and "inconclusive" when the interval straddles it (more rounds, or a
// quieter machine, are needed to tell).
func (r Result) Verdict(target float64) string {
	switch {
	case r.Hi < target:
		return "meets"
	case r.Lo > target:
		return "MISSES"
	default:
		return "inconclusive"
	}
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

// CapFor is the time cap of the pair: CapEnv when set, else p.Cap, else
// DefaultCap. A CapEnv that is not a positive duration is an error, not a
// silent default.
func CapFor(p Pair) (time.Duration, error) {
	if v, ok := os.LookupEnv(CapEnv); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			s, serr := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if serr != nil {
				return 0, fmt.Errorf("ratio: %s=%q is neither a duration nor a number of seconds", CapEnv, v)
			}
			d = time.Duration(s * float64(time.Second))
		}
		if d <= 0 {
			return 0, fmt.Errorf("ratio: %s=%q is not a positive duration", CapEnv, v)
		}
		return d, nil
	}
	if p.Cap > 0 {
		return p.Cap, nil
	}
	return DefaultCap, nil
}

// Measure runs the pair: one warm-up of each side, then at least p.Rounds
// rounds in which the two sides alternate which goes first, and more until
// the interval is within ±Precision of the median or the cap is reached. It
// panics on an invalid CapEnv; Report and Inform fail the test instead.
func Measure(p Pair) Result {
	limit, err := CapFor(p)
	if err != nil {
		panic(err)
	}
	return measure(p, time.Now, limit)
}

// measure is Measure with the clock and the cap passed in, so that the stop
// rule can be tested without waiting on one.
func measure(p Pair, now func() time.Time, limit time.Duration) Result {
	if p.Rounds <= 0 {
		p.Rounds = 7
	}
	if p.Iterations <= 0 {
		p.Iterations = 200
	}
	p.Ours(p.Iterations / 10)
	p.Baseline(p.Iterations / 10)
	res := Result{Pair: p}
	// Room for several times the minimum, so that the slices rarely grow;
	// when they do, it is between rounds, and timed collects the garbage
	// before the next side starts.
	size := max(4*p.Rounds, 64)
	ratios, oursNs, baseNs := make([]float64, 0, size), make([]float64, 0, size), make([]float64, 0, size)
	var b bootstrap
	start := now()
	check := max(p.Rounds, stopFloor)
	capped := false
	for n := 0; ; {
		var ours, base time.Duration
		switch {
		case p.Step > 0:
			ours, base = stepped(p, n%2 == 0, now)
		case n%2 == 0:
			ours, base = timed(p.Ours, p.Iterations, now), timed(p.Baseline, p.Iterations, now)
		default:
			base, ours = timed(p.Baseline, p.Iterations, now), timed(p.Ours, p.Iterations, now)
		}
		ratios = append(ratios, float64(ours)/float64(base))
		oursNs = append(oursNs, float64(ours)/float64(p.Iterations))
		baseNs = append(baseNs, float64(base)/float64(p.Iterations))
		n++
		if n < p.Rounds {
			continue
		}
		if now().Sub(start) >= limit || n >= maxRounds {
			capped = true
			break
		}
		if n >= check {
			// The interval is checked at growing steps, about every tenth
			// of the rounds so far, so that resampling stays a small part
			// of the run however many rounds it takes.
			if med, lo, hi := b.interval(ratios); precise(med, lo, hi) {
				break
			}
			check = n + max(2, n/10)
		}
	}
	res.Elapsed = now().Sub(start)
	res.Rounds = ratios
	res.Median, res.Lo, res.Hi = b.interval(ratios)
	res.Capped = capped
	res.OursNs, res.BaseNs = median(oursNs), median(baseNs)
	return res
}

// bootstrap holds the buffers of the interval's resampling, reused from one
// call to the next so that, once they have grown to the number of rounds,
// computing an interval allocates nothing. It must not be copied after use
// (rng points at pcg).
type bootstrap struct {
	pcg     rand.PCG
	rng     *rand.Rand
	sorted  []float64
	counts  []int32
	medians []float64
}

// interval returns the median of v and its Confidence percentile-bootstrap
// interval: resample v with replacement, take each resample's median, and
// read the interval off the medians' 2.5th and 97.5th percentiles. The
// generator is reseeded with the fixed seed on every call, so the same v
// always gives the same interval.
//
// A resample is drawn as counts of each of v's sorted values rather than as
// values, so its median is one pass over the counts, with no sort.
func (b *bootstrap) interval(v []float64) (med, lo, hi float64) {
	n := len(v)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	b.sorted = append(b.sorted[:0], v...)
	slices.Sort(b.sorted)
	k := n / 2 // the rank median takes: the upper of the two middles
	med = b.sorted[k]
	if cap(b.counts) < n {
		b.counts = make([]int32, n, 2*n)
	}
	counts := b.counts[:n]
	if b.rng == nil {
		b.rng = rand.New(&b.pcg)
		b.medians = make([]float64, resamples)
	}
	b.pcg.Seed(seed1, seed2)
	for r := range b.medians {
		clear(counts)
		for range n {
			counts[b.rng.IntN(n)]++
		}
		seen := 0
		for i, c := range counts {
			if seen += int(c); seen > k {
				b.medians[r] = b.sorted[i]
				break
			}
		}
	}
	slices.Sort(b.medians)
	alpha := (1 - Confidence) / 2
	lo = b.medians[int(math.Floor(alpha*resamples))]
	hi = b.medians[int(math.Ceil((1-alpha)*resamples))-1]
	return med, lo, hi
}

func median(v []float64) float64 {
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// timed collects garbage first, so one side's garbage is not billed to the
// other.
func timed(f func(int), n int, now func() time.Time) time.Duration {
	runtime.GC()
	start := now()
	f(n)
	return now().Sub(start)
}

// stepped is one round of a Step pair: Iterations operations a side, in
// steps that alternate which side goes first (ABBA), garbage collected
// once before the round rather than before every step.
func stepped(p Pair, oursFirst bool, now func() time.Time) (ours, base time.Duration) {
	sides := [2]func(int){p.Ours, p.Baseline}
	var spent [2]time.Duration
	first := 1
	if oursFirst {
		first = 0
	}
	runtime.GC()
	for done := 0; done < p.Iterations; done += p.Step {
		k := min(p.Step, p.Iterations-done)
		t0 := now()
		sides[first](k)
		t1 := now()
		sides[1-first](k)
		spent[first], spent[1-first] = spent[first]+t1.Sub(t0), spent[1-first]+now().Sub(t1)
		first = 1 - first
	}
	return spent[0], spent[1]
}

// Print writes the line make bench collects; scripts read its first three
// fields, "ratio <label>-<name> <median>", as before the interval was added.
func (r Result) Print(w io.Writer) {
	fmt.Fprintf(w, "ratio %s-%s %.3f [%.3f, %.3f] n=%d\n", r.Pair.Label, r.Pair.Name, r.Median, r.Lo, r.Hi, len(r.Rounds))
}

// PrintCost writes the per-operation costs of both sides, the line a plot
// against scale reads.
func (r Result) PrintCost(w io.Writer) {
	fmt.Fprintf(w, "scale-cost %s-%s ours_ns=%.0f base_ns=%.0f\n", r.Pair.Label, r.Pair.Name, r.OursNs, r.BaseNs)
}

// summary is the log line's account of the measurement: the interval, how
// the rounds stopped, and every round's ratio.
func (r Result) summary() string {
	stop := fmt.Sprintf("within ±%.0f%% after %s", Precision*100, r.Elapsed.Round(time.Millisecond))
	if r.Capped {
		stop = fmt.Sprintf("cap reached after %s, interval -%.1f%%/+%.1f%%", r.Elapsed.Round(time.Millisecond),
			(1-r.Lo/r.Median)*100, (r.Hi/r.Median-1)*100)
	}
	var b strings.Builder
	for i, x := range r.Rounds {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 3, 64))
	}
	return fmt.Sprintf("median %.3f, %.0f%% interval [%.3f, %.3f] over %d rounds (%s) [%s]",
		r.Median, Confidence*100, r.Lo, r.Hi, len(r.Rounds), stop, b.String())
}

// measureT is Measure for a test: an invalid CapEnv fails it.
func measureT(t testing.TB, p Pair) Result {
	t.Helper()
	limit, err := CapFor(p)
	if err != nil {
		t.Fatal(err)
	}
	return measure(p, time.Now, limit)
}

// Inform measures the pair and prints its ratio line like Report, for a
// pair kept as information: it has no target.
func Inform(t testing.TB, p Pair) Result {
	t.Helper()
	r := measureT(t, p)
	r.Print(os.Stdout)
	t.Logf("%s-%s: %s; information, no target", p.Label, p.Name, r.summary())
	return r
}

// ReportScale is Report followed by the pair's scale-cost line.
func ReportScale(t testing.TB, p Pair, target float64) Result {
	t.Helper()
	r := Report(t, p, target)
	r.PrintCost(os.Stdout)
	return r
}

// Report measures the pair, prints its ratio line to stdout, and logs the
// Verdict against the target (a miss is reported, not failed: absolute
// timings on shared machines are noise).
func Report(t testing.TB, p Pair, target float64) Result {
	t.Helper()
	r := measureT(t, p)
	r.Print(os.Stdout)
	t.Logf("%s-%s: %s; %s target <= %.2f", p.Label, p.Name, r.summary(), r.Verdict(target), target)
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
