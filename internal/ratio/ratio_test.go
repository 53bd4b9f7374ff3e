package ratio

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock the sides advance by the time they pretend to take,
// so that the stop rule is tested on known per-round ratios, whatever the
// machine's load.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// side returns a side that takes cost(call) per operation on the clock.
func (c *fakeClock) side(cost func(call int) time.Duration) func(int) {
	call := 0
	return func(n int) {
		c.t = c.t.Add(time.Duration(n) * cost(call))
		call++
	}
}

func constant(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

// Measure runs every round of both sides and reports the median ratio and
// per-operation costs; equal sides on the fake clock meet the stop rule at
// the minimum, or at stopFloor when the minimum is below it.
func TestMeasureRunsEveryRound(t *testing.T) {
	for _, c := range []struct{ min, want int }{{stopFloor + 5, stopFloor + 5}, {5, stopFloor}} {
		var clk fakeClock
		var ours, base int
		oursSide, baseSide := clk.side(constant(time.Microsecond)), clk.side(constant(time.Microsecond))
		r := measure(Pair{Label: "S1", Name: "x", Rounds: c.min, Iterations: 40,
			Ours:     func(n int) { ours += n; oursSide(n) },
			Baseline: func(n int) { base += n; baseSide(n) }}, clk.now, time.Hour)
		if want := 4 + c.want*40; ours != want || base != want {
			t.Fatalf("minimum %d: ran %d and %d operations, want %d each (warm-up and rounds)", c.min, ours, base, want)
		}
		if len(r.Rounds) != c.want || r.Median != 1 || r.Lo != 1 || r.Hi != 1 || r.Capped || r.OursNs != 1000 || r.BaseNs != 1000 {
			t.Fatalf("minimum %d: result %+v", c.min, r)
		}
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
	r := Result{Pair: Pair{Label: "S10000", Name: "pg-x-vs-y"}, Median: 0.9512, Lo: 0.93, Hi: 0.9749, Rounds: make([]float64, 23), OursNs: 1234.4, BaseNs: 1300.6}
	var b bytes.Buffer
	r.Print(&b)
	r.PrintCost(&b)
	want := "ratio S10000-pg-x-vs-y 0.951 [0.930, 0.975] n=23\nscale-cost S10000-pg-x-vs-y ours_ns=1234 base_ns=1301\n"
	if b.String() != want {
		t.Errorf("lines = %q, want %q", b.String(), want)
	}
}

// lognormal draws n values whose median is exactly 1 (exp of a centred
// normal), spread by sigma.
func lognormal(rng *rand.Rand, n int, sigma float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Exp(sigma * rng.NormFloat64())
	}
	return v
}

// The interval covers the true median of a known distribution in about 95%
// of samples, and always contains the sample's own median.
func TestIntervalCoversKnownMedian(t *testing.T) {
	var b bootstrap
	const trials = 300
	covered := 0
	for i := range trials {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		v := lognormal(rng, 41, 0.2)
		med, lo, hi := b.interval(v)
		if !(lo <= med && med <= hi) || med != median(v) {
			t.Fatalf("sample %d: median %v outside its own interval [%v, %v]", i, med, lo, hi)
		}
		if lo <= 1 && 1 <= hi {
			covered++
		}
	}
	// Binomial spread of 300 trials at 95% is about ±1.3%; the percentile
	// bootstrap of a median runs a little under or over nominal.
	if rate := float64(covered) / trials; rate < 0.90 || rate > 0.995 {
		t.Fatalf("interval covered the true median in %.1f%% of samples, want about 95%%", rate*100)
	}
}

// Rounds that agree give a narrow interval; rounds spread as this machine
// spreads them give a wide one.
func TestIntervalWidthFollowsSpread(t *testing.T) {
	var b bootstrap
	rng := rand.New(rand.NewPCG(7, 7))
	narrow := lognormal(rng, 31, 0.002)
	med, lo, hi := b.interval(narrow)
	if lo < med*0.995 || hi > med*1.005 {
		t.Errorf("rounds within ±0.5%%: interval [%v, %v] around %v", lo, hi, med)
	}
	wide := lognormal(rng, 31, 0.3)
	med, lo, hi = b.interval(wide)
	if precise(med, lo, hi) {
		t.Errorf("rounds spread ±30%%: interval [%v, %v] around %v passes the ±3%% rule", lo, hi, med)
	}
}

// The same rounds give the same interval, in one bootstrap or a fresh one:
// a logged run can be recomputed.
func TestIntervalIsReproducible(t *testing.T) {
	v := lognormal(rand.New(rand.NewPCG(3, 3)), 25, 0.1)
	var a, b bootstrap
	m1, l1, h1 := a.interval(v)
	_, _, _ = a.interval(lognormal(rand.New(rand.NewPCG(4, 4)), 60, 0.5))
	m2, l2, h2 := a.interval(v)
	m3, l3, h3 := b.interval(slices.Clone(v))
	if m1 != m2 || l1 != l2 || h1 != h2 || m1 != m3 || l1 != l3 || h1 != h3 {
		t.Fatalf("intervals differ: [%v %v %v] [%v %v %v] [%v %v %v]", m1, l1, h1, m2, l2, h2, m3, l3, h3)
	}
	if l1 == h1 {
		t.Fatalf("a spread sample gave a point interval %v", l1)
	}
}

// Once its buffers have grown, computing an interval allocates nothing, so
// checking the stop rule between rounds leaves no garbage for a side to pay.
func TestIntervalDoesNotAllocate(t *testing.T) {
	var b bootstrap
	v := lognormal(rand.New(rand.NewPCG(5, 5)), 50, 0.1)
	b.interval(v)
	if a := testing.AllocsPerRun(20, func() { b.interval(v[:40]); b.interval(v) }); a != 0 {
		t.Fatalf("interval allocates %v times a run", a)
	}
}

// Rounds spread far wider than ±3% never meet the rule: rounds are added
// past the minimum until the cap, and stop there.
func TestStopRuleStopsAtCap(t *testing.T) {
	var c fakeClock
	// Ours takes 1 or 3 µs an operation in turn, the baseline 2: ratios of
	// 0.5 and 1.5, a median that no number of rounds pins to ±3%.
	ours := c.side(func(call int) time.Duration { return time.Duration(1+2*(call%2)) * time.Microsecond })
	base := c.side(constant(2 * time.Microsecond))
	const capDur = 4 * time.Second // 1,000 operations a side: about 2 ms a side, 4 a round
	r := measure(Pair{Label: "T", Name: "cap", Rounds: 7, Iterations: 1000, Ours: ours, Baseline: base}, c.now, capDur)
	if !r.Capped || r.Precise() {
		t.Fatalf("stopped with interval [%v, %v] around %v, Capped %v", r.Lo, r.Hi, r.Median, r.Capped)
	}
	if r.Elapsed < capDur || r.Elapsed > capDur+5*time.Millisecond {
		t.Fatalf("stopped after %v, want the cap %v and at most one round more", r.Elapsed, capDur)
	}
	if len(r.Rounds) < 900 {
		t.Fatalf("%d rounds: rounds were not added up to the cap", len(r.Rounds))
	}
}

// The cap also ends a slow pair's rounds at its minimum, below stopFloor:
// a pair whose rounds take seconds is not held for 20 of them.
func TestCapEndsSlowPairAtMinimum(t *testing.T) {
	var c fakeClock
	ours, base := c.side(constant(time.Millisecond)), c.side(constant(time.Millisecond))
	r := measure(Pair{Rounds: 3, Iterations: 1000, Ours: ours, Baseline: base}, c.now, time.Second)
	if len(r.Rounds) != 3 || !r.Capped {
		t.Fatalf("%d rounds, Capped %v; want the minimum 3, ended by the cap", len(r.Rounds), r.Capped)
	}
}

// Rounds spread by about 6% need more than the minimum; the rule adds them
// and stops, before the cap, once the interval is within ±3%.
func TestStopRuleAddsRoundsUntilPrecise(t *testing.T) {
	var c fakeClock
	rng := rand.New(rand.NewPCG(11, 11))
	ours := c.side(func(int) time.Duration {
		return time.Duration(float64(time.Microsecond) * math.Exp(0.06*rng.NormFloat64()))
	})
	base := c.side(constant(time.Microsecond))
	r := measure(Pair{Label: "T", Name: "adds", Rounds: 7, Iterations: 1000, Ours: ours, Baseline: base}, c.now, time.Hour)
	if r.Capped || !r.Precise() {
		t.Fatalf("stopped with interval [%v, %v] around %v, Capped %v after %d rounds", r.Lo, r.Hi, r.Median, r.Capped, len(r.Rounds))
	}
	if len(r.Rounds) < stopFloor || len(r.Rounds) > 200 {
		t.Fatalf("%d rounds, want more than the minimum and far fewer than the cap allows", len(r.Rounds))
	}
	if r.Lo > 1 || r.Hi < 1 {
		t.Errorf("interval [%v, %v] misses the true ratio 1", r.Lo, r.Hi)
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0.95, 1.04, "meets"},
		{0.99, 1.05, "inconclusive"}, // the upper end must be under the target
		{1.00, 1.08, "inconclusive"},
		{1.05, 1.10, "inconclusive"},
		{1.06, 1.10, "MISSES"},
	} {
		r := Result{Median: (c.lo + c.hi) / 2, Lo: c.lo, Hi: c.hi}
		if got := r.Verdict(1.05); got != c.want {
			t.Errorf("[%v, %v] against 1.05: %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
}

func TestCapFor(t *testing.T) {
	t.Setenv(CapEnv, "")
	if d, err := CapFor(Pair{}); err != nil || d != DefaultCap {
		t.Errorf("unset: %v %v", d, err)
	}
	if d, err := CapFor(Pair{Cap: time.Minute * 3}); err != nil || d != 3*time.Minute {
		t.Errorf("pair's own cap: %v %v", d, err)
	}
	for v, want := range map[string]time.Duration{"90s": 90 * time.Second, "2m": 2 * time.Minute, "45": 45 * time.Second, "0.5": 500 * time.Millisecond} {
		t.Setenv(CapEnv, v)
		if d, err := CapFor(Pair{Cap: time.Hour}); err != nil || d != want {
			t.Errorf("%s=%s: %v %v, want %v", CapEnv, v, d, err, want)
		}
	}
	for _, v := range []string{"x", "0", "-5s", "10 minutes"} {
		t.Setenv(CapEnv, v)
		if d, err := CapFor(Pair{}); err == nil {
			t.Errorf("%s=%q accepted as %v", CapEnv, v, d)
		}
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

// Parallel calls every index once, from no more goroutines than asked, and
// stops handing out indexes after a failure, returning the first error.
func TestParallel(t *testing.T) {
	for _, c := range []struct{ g, n int }{{64, 1000}, {8, 3}, {0, 5}, {4, 0}} {
		var mu sync.Mutex
		seen := make([]int, c.n)
		var running, peak atomic.Int64
		err := Parallel(c.g, c.n, func(i int) error {
			if r := running.Add(1); r > peak.Load() {
				peak.Store(r) // racy max, good enough as a lower bound
			}
			time.Sleep(100 * time.Microsecond)
			running.Add(-1)
			mu.Lock()
			seen[i]++
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range seen {
			if k != 1 {
				t.Fatalf("g=%d n=%d: index %d called %d times", c.g, c.n, i, k)
			}
		}
		if p := peak.Load(); p > int64(max(1, c.g)) {
			t.Fatalf("g=%d n=%d: %d calls at once", c.g, c.n, p)
		}
	}
	boom := errors.New("boom")
	var calls atomic.Int64
	err := Parallel(4, 100000, func(i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if err != boom {
		t.Fatalf("err = %v, want boom", err)
	}
	if k := calls.Load(); k == 100000 {
		t.Fatal("every index was handed out after a failure")
	}
}

// ParallelSide walks on through the tenants from one call to the next,
// wrapping, and calls each index of a call once.
func TestParallelSide(t *testing.T) {
	var mu sync.Mutex
	var got []int
	side := ParallelSide(t, 3, 7, func(k int) error {
		mu.Lock()
		got = append(got, k)
		mu.Unlock()
		return nil
	})
	for _, want := range [][]int{{0, 1, 2, 3, 4}, {0, 1, 2, 5, 6}, {3, 4, 5, 6}} {
		got = got[:0]
		side(len(want))
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("tenants %v, want %v", got, want)
		}
	}
}

// With ProfileEnv set, ReportParallel writes both profiles of the pair and
// leaves the mutex profile rate as it found it.
func TestReportParallelProfiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ProfileEnv, dir)
	t.Setenv(CapEnv, "200ms")
	var (
		mu    sync.Mutex
		calls int // a contended lock for the profile to see
	)
	op := func(int) error { mu.Lock(); calls++; mu.Unlock(); return nil }
	before := runtime.SetMutexProfileFraction(-1)
	ReportParallel(t, Pair{Label: "C1", Name: "x", Iterations: 100, Rounds: 3,
		Ours: ParallelSide(t, 4, 1, op), Baseline: ParallelSide(t, 4, 1, op)}, 1.05, 100)
	if after := runtime.SetMutexProfileFraction(-1); after != before {
		t.Errorf("mutex profile fraction %d after, %d before", after, before)
	}
	for _, kind := range []string{"mutex", "block"} {
		fi, err := os.Stat(filepath.Join(dir, "C1-x."+kind+".pb.gz"))
		if err != nil || fi.Size() == 0 {
			t.Errorf("%s profile: %v", kind, err)
		}
	}
}

func TestReportRoundsIsTheMedianWithItsInterval(t *testing.T) {
	rounds := []float64{1.1, 0.9, 1.0, 1.2, 1.0, 0.95, 1.05}
	r := ReportRounds(t, "F1", "test", rounds, 1.5)
	if r.Median != 1.0 || r.Lo > 1.0 || r.Hi < 1.0 || len(r.Rounds) != 7 || r.Verdict(1.5) != "meets" {
		t.Fatalf("%+v (%s)", r, r.Verdict(1.5))
	}
}

// FromRounds gives the rounds' median and an interval around it.
func TestFromRounds(t *testing.T) {
	r := FromRounds("F1", "x", []float64{1.2, 1.0, 1.1, 1.3, 0.9})
	if r.Median != 1.1 || r.Lo > r.Median || r.Hi < r.Median || r.Lo < 0.9 || r.Hi > 1.3 {
		t.Fatalf("median %v [%v, %v]", r.Median, r.Lo, r.Hi)
	}
}

// A machine that drifts between fast and slow spells, each shorter than a
// round but longer than a step: equal sides timed whole come out unequal
// in the rounds a spell splits, and timed in alternating steps they come
// out equal, since each step and the next share a spell.
func TestStepCancelsADrift(t *testing.T) {
	var clk fakeClock
	start := clk.t
	drifting := func(n int) {
		for range n {
			cost := time.Microsecond
			if clk.t.Sub(start)/time.Millisecond%7 < 3 {
				cost *= 2
			}
			clk.t = clk.t.Add(cost)
		}
	}
	var ops [2]int
	pair := func(step int) Pair {
		return Pair{Label: "S1", Name: "drift", Rounds: 40, Iterations: 1000, Step: step,
			Ours: func(n int) { ops[0] += n; drifting(n) }, Baseline: func(n int) { ops[1] += n; drifting(n) }}
	}
	whole := measure(pair(0), clk.now, time.Nanosecond)
	spread := func(r Result) float64 {
		worst := 0.0
		for _, x := range r.Rounds {
			worst = max(worst, math.Abs(math.Log(x)))
		}
		return worst
	}
	if spread(whole) < 0.2 {
		t.Fatalf("the drift does not split whole rounds (worst |log ratio| %.3f): the test proves nothing", spread(whole))
	}
	ops = [2]int{}
	r := measure(pair(10), clk.now, time.Nanosecond)
	if got := spread(r); got > 0.02 {
		t.Errorf("stepped rounds still spread by |log ratio| %.3f: %v", got, r.Rounds)
	}
	if want := 100 + 40*1000; ops[0] != want || ops[1] != want {
		t.Errorf("stepped sides ran %v operations, want %d each (warm-up and 40 rounds of 1,000)", ops, want)
	}
	if r.OursNs < 1000 || r.OursNs > 2000 || r.Median < 0.98 || r.Median > 1.02 {
		t.Errorf("stepped result %+v", r)
	}
}
