package ratio

import (
	"os"
	"slices"
	"testing"
	"time"
)

// FromRounds is the Result of ratios the caller measured round by round,
// for a pair whose figure is not the time of a side, such as the ratio of
// two p99 latencies of one round: their median and its bootstrap interval,
// as Measure computes them.
func FromRounds(label, name string, rounds []float64) Result {
	var b bootstrap
	r := Result{Pair: Pair{Label: label, Name: name}, Rounds: rounds}
	r.Median, r.Lo, r.Hi = b.interval(rounds)
	return r
}

// ReportRounds prints FromRounds' line for make bench and logs every
// round with the verdict against target, as Report does.
func ReportRounds(t testing.TB, label, name string, rounds []float64, target float64) Result {
	t.Helper()
	r := FromRounds(label, name, rounds)
	r.Print(os.Stdout)
	t.Logf("%s-%s: median %.3f, %.0f%% interval [%.3f, %.3f] over %d rounds %v; %s target <= %.2f",
		label, name, r.Median, Confidence*100, r.Lo, r.Hi, len(rounds), rounds, r.Verdict(target), target)
	return r
}

// P99Rounds is the rounds of a fairness pair: n rounds of p99(phase(true))
// over p99(phase(false)), the two phases' order alternating so that
// neither always runs on a warmer server. phase returns the latencies it
// measured (any order; at least one).
func P99Rounds(n int, phase func(flood bool) []time.Duration) []float64 {
	p99 := func(l []time.Duration) time.Duration {
		slices.Sort(l)
		return l[len(l)*99/100]
	}
	rounds := make([]float64, 0, n)
	for i := range n {
		var quiet, flooded []time.Duration
		if i%2 == 0 {
			quiet, flooded = phase(false), phase(true)
		} else {
			flooded, quiet = phase(true), phase(false)
		}
		rounds = append(rounds, float64(p99(flooded))/float64(p99(quiet)))
	}
	return rounds
}
