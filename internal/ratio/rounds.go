package ratio

import (
	"os"
	"testing"
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
