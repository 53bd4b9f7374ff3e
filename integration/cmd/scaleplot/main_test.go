package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const sampleLog = "testdata/bench-sample.log"

func sample(t *testing.T) benchLog {
	t.Helper()
	f, err := os.Open(sampleLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func panelNamed(t *testing.T, ps []panel, title string) panel {
	t.Helper()
	for _, p := range ps {
		if p.title == title {
			return p
		}
	}
	t.Fatalf("no panel %q among %v", title, titles(ps))
	return panel{}
}

func seriesNamed(t *testing.T, p panel, name string) series {
	t.Helper()
	for _, s := range p.series {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("panel %s has no series %q", p.title, name)
	return series{}
}

func titles(ps []panel) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.title)
	}
	return out
}

func counts(s series) []int {
	var out []int
	for _, p := range s.points {
		out = append(out, p.tenants)
	}
	return out
}

func TestParseSample(t *testing.T) {
	l := sample(t)
	if len(l.costs) != 11 {
		t.Errorf("parsed %d costs, want 11 (the malformed line skipped): %+v", len(l.costs), l.costs)
	}
	var s, c int
	byName := map[string]ratioLine{}
	for _, r := range l.ratios {
		byName[r.family+"-"+r.name] = r
		switch r.family {
		case "S":
			s++
		case "C":
			c++
		default:
			t.Errorf("ratio of family %q: only S and C lines are read", r.family)
		}
	}
	// 13 S lines, one repeated and one whose interval does not hold its
	// median; the P1 line is not a scale or concurrency pair.
	if s != 11 || c != 9 {
		t.Errorf("%d S and %d C ratios, want 11 and 9: %+v", s, c, l.ratios)
	}
	if r := byName["C-redis-namespace-get-g8"]; r.tenants != 10000 || r.median != 1.004 || r.lo != 0.981 || r.hi != 1.030 || r.rounds != 38 {
		t.Errorf("C10000-redis-namespace-get-g8 = %+v", r)
	}
	if r := byName["S-redis-tagged-get"]; r.median != 0.970 || r.lo != 0.950 || r.hi != 0.990 || r.rounds != 33 {
		t.Errorf("a repeated pair keeps its last line: %+v", r)
	}
	if r := byName["S-heap-growth-vs-S1000"]; r.tenants != 10000 || r.interval {
		t.Errorf("a line without an interval reads as a median alone: %+v", r)
	}
	if r := byName["S-pg-namespace-get-vs-hand"]; !r.interval || r.lo != 1.001 || r.hi != 1.061 || r.tenants != 10000 {
		t.Errorf("S10000 vs hand = %+v", r)
	}
}

func TestTargets(t *testing.T) {
	for _, c := range []struct {
		family  string
		tenants int
		name    string
		want    float64
	}{
		{"S", 1, "pg-namespace-get-vs-hand", 1.05},
		{"S", 10000, "pg-namespace-update-vs-hand", 1.05},
		{"S", 1000, "pg-namespace-get-vs-pipelined", 0.90},
		{"S", 1, "pg-namespace-get-vs-search-path", 0.70},
		{"S", 1000, "pg-namespace-update-vs-search-path", 0.85},
		{"S", 10000, "pg-namespace-get-vs-search-path", 0.85},
		{"S", 10000, "pg-tagged-get-vs-hand", 1.05},
		{"S", 10000, "pg-tagged-get-vs-1-tenant", 1.20},
		{"S", 10000, "heap-growth-vs-S1000", 2},
		{"S", 10000, "redis-namespace-set", 1.05},
		{"S", 1000, "pg-routed-churn-get-vs-hand-lru", 1.05},
		{"S", 1000, "mongo-per-tenant-collection-find", 1.05},
		{"C", 8, "pg-namespace-get-vs-search-path", 1.05},
		{"C", 64, "redis-tagged-get", 1.05},
		{"C", 10000, "redis-namespace-get-g8", 1.05},
		{"C", 100, "pg-routed-churn-get", 1.05},
	} {
		if got, ok := target(c.family, c.tenants, c.name); !ok || got != c.want {
			t.Errorf("target(%s%d-%s) = %v, %v; want %v", c.family, c.tenants, c.name, got, ok, c.want)
		}
	}
	if _, ok := target("P", 1, "pg-tagged-get"); ok {
		t.Error("a family scaleplot does not draw has a target")
	}
}

func TestCostPanels(t *testing.T) {
	ps := costPanels(sample(t).costs)
	want := []string{"kafka-sharded-consumer-start", "pg-namespace-get", "pg-tagged-get", "redis-tagged-get"}
	if got := titles(ps); !slices.Equal(got, want) {
		t.Fatalf("panels %v, want one per operation %v", got, want)
	}
	ns := panelNamed(t, ps, "pg-namespace-get")
	if got := []string{ns.series[0].name, ns.series[1].name, ns.series[2].name, ns.series[3].name}; len(ns.series) != 4 ||
		!slices.Equal(got, []string{"ours", "hand", "pipelined", "search-path"}) {
		t.Fatalf("series %+v, want ours then each baseline", ns.series)
	}
	ours := seriesNamed(t, ns, "ours")
	if ours.dashed || !slices.Equal(counts(ours), []int{1, 1000, 10000}) {
		t.Errorf("ours = %+v, want a solid curve at 1, 1,000 and 10,000", ours)
	}
	// At 1 tenant three pairs measured the route: 98, 100 and 102 µs.
	if ours.points[0].y != 100000 || ours.points[1].y != 212000 {
		t.Errorf("ours = %+v, want the median of its measurements at each count", ours.points)
	}
	path := seriesNamed(t, ns, "search-path")
	if !path.dashed || !slices.Equal(counts(path), []int{1, 1000, 10000}) || path.points[2].y != 288000 {
		t.Errorf("search-path = %+v, want a dashed curve of the baseline's costs", path)
	}
	if p := seriesNamed(t, ns, "pipelined"); !slices.Equal(counts(p), []int{1}) {
		t.Errorf("pipelined = %+v, measured at 1 only", p)
	}
	if ns.unit != "µs per operation" {
		t.Errorf("unit %q", ns.unit)
	}
	tagged := panelNamed(t, ps, "pg-tagged-get")
	if len(tagged.series) != 1 || !slices.Equal(counts(tagged.series[0]), []int{1, 10000}) {
		t.Errorf("the one-tenant pair is the route's own curve: %+v", tagged.series)
	}
	redis := seriesNamed(t, panelNamed(t, ps, "redis-tagged-get"), "hand-written")
	if !redis.dashed || redis.points[0].y != 42750 {
		t.Errorf("a pair without -vs- is against the hand-written code: %+v", redis)
	}
	if start := panelNamed(t, ps, "kafka-sharded-consumer-start"); start.unit != "s per operation" || start.scale != 1e9 {
		t.Errorf("a start-up of seconds is drawn in seconds on its own panel: %q %v", start.unit, start.scale)
	}
}

func TestRatioPanels(t *testing.T) {
	l := sample(t)
	ps := ratioPanels(l.ratios, "S")
	want := []string{"heap-growth", "kafka-sharded-consumer-start", "pg-namespace-get", "pg-tagged-get", "redis-tagged-get"}
	if got := titles(ps); !slices.Equal(got, want) {
		t.Fatalf("panels %v, want %v", got, want)
	}
	ns := panelNamed(t, ps, "pg-namespace-get")
	path := seriesNamed(t, ns, "search-path")
	if !slices.Equal(counts(path), []int{1, 1000, 10000}) {
		t.Fatalf("search-path = %+v", path)
	}
	if p := path.points[1]; p.y != 0.78 || p.lo != 0.76 || p.hi != 0.801 || !p.interval {
		t.Errorf("S1000 vs search-path = %+v, want its median and interval", p)
	}
	if len(ns.targets) != 3 {
		t.Fatalf("targets %+v, want one per baseline", ns.targets)
	}
	var steps []step
	for _, tl := range ns.targets {
		if tl.name == "search-path" {
			steps = tl.steps
		}
	}
	// 0.70 up to half-way between 1 and 1,000 (on the log scale), 0.85 on.
	if len(steps) != 3 || steps[0].target != 0.70 || steps[1].target != 0.85 || steps[2].target != 0.85 ||
		steps[0].from != panelXMin || steps[2].to != panelXMax || steps[0].to != steps[1].from {
		t.Errorf("search-path target steps %+v", steps)
	}
	for _, tl := range ns.targets {
		if tl.name == "pipelined" && (len(tl.steps) != 1 || tl.steps[0].target != 0.90) {
			t.Errorf("pipelined target %+v", tl)
		}
	}
	heap := panelNamed(t, ps, "heap-growth")
	if p := heap.series[0].points[0]; p.interval || p.y != 0 || heap.targets[0].steps[0].target != 2 {
		t.Errorf("heap growth = %+v, targets %+v: a median with no bar, against 2", p, heap.targets)
	}
	tagged := panelNamed(t, ps, "pg-tagged-get")
	if tagged.series[0].name != "1-tenant" || tagged.targets[0].steps[0].target != 1.20 {
		t.Errorf("tagged = %+v", tagged)
	}

	// One panel per operation, one series per goroutine count (a name
	// without -g<G> ran from 64), 1 to 10,000 tenants on one axis.
	cs := ratioPanels(l.ratios, "C")
	if got := titles(cs); !slices.Equal(got, []string{"http-boundary-get", "pg-routed-churn-get", "redis-namespace-get"}) {
		t.Fatalf("concurrency panels %v: only the C lines, by operation", got)
	}
	redis := panelNamed(t, cs, "redis-namespace-get")
	if got := []string{redis.series[0].name, redis.series[1].name}; len(redis.series) != 2 || !slices.Contains(got, "G=64") || !slices.Contains(got, "G=8") {
		t.Fatalf("redis series %+v, want G=64 and G=8", redis.series)
	}
	for _, g := range []string{"G=64", "G=8"} {
		if s := seriesNamed(t, redis, g); !slices.Equal(counts(s), []int{1, 1000, 10000}) {
			t.Errorf("redis %s = %+v", g, s)
		}
	}
	if p := seriesNamed(t, redis, "G=64").points[1]; p.y != 1.086 || p.lo != 1.054 || p.hi != 1.115 || !p.interval {
		t.Errorf("C1000 redis G=64 = %+v", p)
	}
	// Both series have the target 1.05: it is drawn once.
	if len(redis.targets) != 1 || len(redis.targets[0].steps) != 3 || redis.targets[0].steps[2].target != 1.05 || redis.targets[0].steps[2].to != panelXMax {
		t.Errorf("redis targets %+v, want one line at 1.05 to the panel's end", redis.targets)
	}
	if s := seriesNamed(t, panelNamed(t, cs, "http-boundary-get"), "G=16"); !slices.Equal(counts(s), []int{10000}) {
		t.Errorf("http G=16 = %+v", s)
	}
}

func TestRunDrawsEachFamilyAndSkipsAnEmptyOne(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "scale.png"), filepath.Join(dir, "scale-ratios.png"), filepath.Join(dir, "concurrency-ratios.png")}
	var stdout, stderr bytes.Buffer
	if err := run(sampleLog, paths[0], paths[1], paths[2], &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q with every family present", stderr.String())
	}
	// 4 cost panels in one row, 5 S panels in two rows of 4, 3 C panels.
	for i, want := range [][2]int{{4, 1}, {4, 2}, {3, 1}} {
		f, err := os.Open(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", paths[i], err)
		}
		b := img.Bounds()
		wantW := float64(want[0])*panelWidth.Dots(dpi) + legendWidth.Dots(dpi)
		wantH := float64(want[1])*panelHeight.Dots(dpi) + titleHeight.Dots(dpi)
		if d := float64(b.Dx()) - wantW; d < -2 || d > 2 {
			t.Errorf("%s is %d wide, want %.0f (%d columns and the legend)", paths[i], b.Dx(), wantW, want[0])
		}
		if d := float64(b.Dy()) - wantH; d < -2 || d > 2 {
			t.Errorf("%s is %d high, want %.0f (%d rows and the title)", paths[i], b.Dy(), wantH, want[1])
		}
	}

	// A log without C lines: the concurrency figure is skipped, saying so.
	noC := filepath.Join(dir, "no-c.log")
	b, err := os.ReadFile(sampleLog)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "ratio C") {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(noC, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	concPath := filepath.Join(dir, "none.png")
	stderr.Reset()
	if err := run(noC, paths[0], paths[1], concPath, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "no ratio C<tenants>- lines") || !strings.Contains(stderr.String(), concPath) {
		t.Errorf("stderr %q, want the skipped figure named", stderr.String())
	}
	if _, err := os.Stat(concPath); !os.IsNotExist(err) {
		t.Errorf("the concurrency figure was written with no C lines: %v", err)
	}

	// A log with nothing to draw fails.
	empty := filepath.Join(dir, "empty.log")
	if err := os.WriteFile(empty, []byte("ok  \tgithub.com/x 1.0s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(empty, paths[0], paths[1], concPath, &stdout, &stderr); err == nil {
		t.Error("a log with no lines to draw drew nothing and did not fail")
	}
}
