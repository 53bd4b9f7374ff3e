// Command scaleplot draws the scale figures of docs/performance.md from the
// output of `make bench`, as small multiples: one panel per backend and
// operation, the tenant count on a log scale.
//
//   - the costs (-out, docs/img/scale.png): the cost of one operation of the
//     route ("ours", solid) and of each baseline (dashed), from the
//     "scale-cost S<tenants>-<name> ours_ns=<x> base_ns=<y>" lines;
//   - the scale ratios (-ratios, docs/img/scale-ratios.png): each pair's
//     median ratio with its confidence interval as an error bar, against its
//     target (dotted), from the
//     "ratio S<tenants>-<name> <median> [<lo>, <hi>] n=<rounds>" lines;
//   - the concurrency ratios (-concurrency, docs/img/concurrency-ratios.png):
//     the same for the "ratio C<tenants>-<name>[-g<G>] ..." lines, one
//     series per goroutine count (no suffix: 64).
//
// A figure whose lines are missing from the log is skipped, saying so on
// stderr. It lives in the integration module so that the plotting library
// stays out of the library's go.mod and import graph.
//
//	go run ./cmd/scaleplot -in /tmp/tenantwire-bench.log -out ../docs/img/scale.png \
//	    -ratios ../docs/img/scale-ratios.png -concurrency ../docs/img/concurrency-ratios.png
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image/color"
	"io"
	"log"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func main() {
	in := flag.String("in", "/tmp/tenantwire-bench.log", "bench output to read")
	out := flag.String("out", "docs/img/scale.png", "PNG of the costs per operation")
	ratios := flag.String("ratios", "docs/img/scale-ratios.png", "PNG of the scale (S) ratios")
	conc := flag.String("concurrency", "docs/img/concurrency-ratios.png", "PNG of the concurrency (C) ratios")
	flag.Parse()
	if err := run(*in, *out, *ratios, *conc, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// run draws the figures of the log at in; a figure whose family has no
// lines is skipped, saying so on stderr, and a log with none at all fails.
func run(in, costsPath, scalePath, concPath string, stdout, stderr io.Writer) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	l, err := parse(f)
	if err != nil {
		return err
	}
	drawn := 0
	for _, fig := range figures(l, costsPath, scalePath, concPath) {
		if len(fig.panels) == 0 {
			fmt.Fprintf(stderr, "scaleplot: no %s lines in %s; %s not drawn\n", fig.lines, in, fig.path)
			continue
		}
		if err := fig.save(); err != nil {
			return err
		}
		drawn++
		fmt.Fprintf(stdout, "scaleplot: %d panels drawn to %s\n", len(fig.panels), fig.path)
	}
	if drawn == 0 {
		return fmt.Errorf("scaleplot: no scale-cost or ratio S/C lines in %s", in)
	}
	return nil
}

// cost is one scale-cost line.
type cost struct {
	tenants        int
	name           string // such as "pg-namespace-get-vs-hand"
	oursNs, baseNs float64
}

// ratioLine is one "ratio" line of the S (scale) or C (concurrency) family.
type ratioLine struct {
	family   string // "S" or "C"
	tenants  int
	name     string
	median   float64
	lo, hi   float64 // the confidence interval; zero when the line has none
	interval bool    // a line written before the interval was added has none
	rounds   int
}

// benchLog is what scaleplot reads from a bench log.
type benchLog struct {
	costs  []cost
	ratios []ratioLine
}

var (
	costLine  = regexp.MustCompile(`^scale-cost S(\d+)-(\S+) ours_ns=([0-9.]+) base_ns=([0-9.]+)$`)
	ratioRe   = regexp.MustCompile(`^ratio ([SC])(\d+)-(\S+) ([0-9.]+)(?: \[([0-9.]+), ([0-9.]+)\] n=(\d+))?$`)
	panelXMin = 0.5 // the x range of every panel, so that panels compare at a glance
	panelXMax = 20000.0
)

// parse reads the scale-cost and S/C ratio lines of r, ignoring every other
// line. When a log holds several runs of one ratio pair, the last is kept.
func parse(r io.Reader) (benchLog, error) {
	var out benchLog
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := costLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			ours, _ := strconv.ParseFloat(m[3], 64)
			base, _ := strconv.ParseFloat(m[4], 64)
			out.costs = append(out.costs, cost{tenants: n, name: m[2], oursNs: ours, baseNs: base})
			continue
		}
		m := ratioRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rl := ratioLine{family: m[1], name: m[3]}
		rl.tenants, _ = strconv.Atoi(m[2])
		rl.median, _ = strconv.ParseFloat(m[4], 64)
		if m[5] != "" {
			rl.lo, _ = strconv.ParseFloat(m[5], 64)
			rl.hi, _ = strconv.ParseFloat(m[6], 64)
			rl.rounds, _ = strconv.Atoi(m[7])
			if rl.lo > rl.median || rl.hi < rl.median {
				continue // not an interval around its median: a malformed line
			}
			rl.interval = true
		}
		key := rl.family + m[2] + "-" + rl.name
		if i, ok := seen[key]; ok {
			out.ratios[i] = rl
			continue
		}
		seen[key] = len(out.ratios)
		out.ratios = append(out.ratios, rl)
	}
	return out, sc.Err()
}

// targets is every pair's target, in one place: the first rule whose
// family and name suffix match, and whose maxTenants (when not 0) is not
// below the pair's tenant count, applies. The S-pair targets are those of
// docs/performance.md.
var targets = []struct {
	family     string
	suffix     string // of the pair's name; "" matches any
	maxTenants int    // 0: any count
	target     float64
}{
	// At one tenant the route's statements are prepared; past the prepared
	// budget both sides plan every read, and 0.85 is what saving the round
	// trip and the SET can reach.
	{"S", "-vs-search-path", 1, 0.70},
	{"S", "-vs-search-path", 0, 0.85},
	{"S", "-vs-pipelined", 0, 0.90},
	{"S", "-vs-hand", 0, 1.05}, // namespace and tagged PostgreSQL reads and writes
	{"S", "-vs-1-tenant", 0, 1.20},
	{"S", "heap-growth-vs-S1000", 0, 2},
	{"S", "", 0, 1.05}, // every other backend's pair
	{"C", "", 0, 1.05},
}

// target is the target of a pair, and whether it has one.
func target(family string, tenants int, name string) (float64, bool) {
	for _, t := range targets {
		if t.family == family && strings.HasSuffix(name, t.suffix) && (t.maxTenants == 0 || tenants <= t.maxTenants) {
			return t.target, true
		}
	}
	return 0, false
}

// point is one measurement of a series: y at a tenant count, with its
// interval when it has one.
type point struct {
	tenants  int
	y        float64
	lo, hi   float64
	interval bool
}

// series is one line of a panel.
type series struct {
	name   string // "ours" or the baseline, such as "hand"
	dashed bool
	points []point
}

// panel is one backend and operation.
type panel struct {
	title   string // the operation, such as "pg-namespace-get"
	unit    string // of the y axis
	scale   float64
	series  []series
	targets []targetLine // the ratio figures: each baseline's target
}

// targetLine is a baseline's target over a panel's x range, in steps.
type targetLine struct {
	name  string // the baseline
	steps []step
}

// step is a target over a range of tenant counts.
type step struct{ from, to, target float64 }

// split names a pair's operation and baseline: "<op>-vs-<baseline>", or
// "<op>" against the hand-written code.
func split(name string) (op, base string) {
	op, base, ok := strings.Cut(name, "-vs-")
	if !ok {
		base = "hand-written"
	}
	return op, base
}

// costPanels groups costs into one panel per operation: the route's curve
// (the median of its measurements at each tenant count, since every pair
// of an operation measures it again), solid, and one dashed curve per
// baseline. "<op>-vs-1-tenant" (the route at one tenant) adds a point at 1
// to the route's curve.
func costPanels(costs []cost) []panel {
	samples := map[string]map[string]map[int][]float64{} // op, curve, tenants
	add := func(op, curve string, n int, ns float64) {
		if samples[op] == nil {
			samples[op] = map[string]map[int][]float64{}
		}
		if samples[op][curve] == nil {
			samples[op][curve] = map[int][]float64{}
		}
		samples[op][curve][n] = append(samples[op][curve][n], ns)
	}
	for _, c := range costs {
		op, base := split(c.name)
		add(op, "ours", c.tenants, c.oursNs)
		if base == "1-tenant" {
			add(op, "ours", 1, c.baseNs)
			continue
		}
		add(op, base, c.tenants, c.baseNs)
	}
	var out []panel
	for _, op := range slices.Sorted(maps.Keys(samples)) {
		p := panel{title: op}
		curves := samples[op]
		names := slices.DeleteFunc(slices.Sorted(maps.Keys(curves)), func(s string) bool { return s == "ours" })
		var largest float64
		for _, name := range append([]string{"ours"}, names...) {
			byN, ok := curves[name]
			if !ok {
				continue
			}
			s := series{name: name, dashed: name != "ours"}
			for _, n := range slices.Sorted(maps.Keys(byN)) {
				y := median(byN[n])
				largest = max(largest, y)
				s.points = append(s.points, point{tenants: n, y: y})
			}
			p.series = append(p.series, s)
		}
		// One unit per panel: a Redis GET is tens of µs, a consumer's
		// start-up tens of seconds.
		p.unit, p.scale = "µs per operation", 1e3
		switch {
		case largest >= 1e9:
			p.unit, p.scale = "s per operation", 1e9
		case largest >= 1e6:
			p.unit, p.scale = "ms per operation", 1e6
		}
		out = append(out, p)
	}
	return out
}

// ratioPanels groups one family's ratios into one panel per operation: one
// series per baseline (per goroutine count for the C family), each point
// with its interval, and each series' target as a step line over the
// panel's range (the target may change with the tenant count, as against
// search_path); a target line another series already drew is not drawn
// again.
func ratioPanels(ratios []ratioLine, family string) []panel {
	byOp := map[string]map[string][]ratioLine{}
	pairOf := map[string]string{} // op and series: the name targets are looked up by
	for _, r := range ratios {
		if r.family != family {
			continue
		}
		op, base := split(r.name)
		pair := op + "-vs-" + base
		if family == "C" {
			op, base = splitConc(r.name)
			pair = r.name
		}
		if byOp[op] == nil {
			byOp[op] = map[string][]ratioLine{}
		}
		byOp[op][base] = append(byOp[op][base], r)
		pairOf[op+"\x00"+base] = pair
	}
	var out []panel
	for _, op := range slices.Sorted(maps.Keys(byOp)) {
		p := panel{title: op, unit: "ratio ours / baseline", scale: 1}
		for _, base := range slices.Sorted(maps.Keys(byOp[op])) {
			rs := byOp[op][base]
			slices.SortFunc(rs, func(a, b ratioLine) int { return a.tenants - b.tenants })
			s := series{name: base}
			for _, r := range rs {
				s.points = append(s.points, point{tenants: r.tenants, y: r.median, lo: r.lo, hi: r.hi, interval: r.interval})
			}
			p.series = append(p.series, s)
			t := targetSteps(family, pairOf[op+"\x00"+base], base, s.points)
			if len(t.steps) > 0 && !slices.ContainsFunc(p.targets, func(o targetLine) bool { return slices.Equal(o.steps, t.steps) }) {
				p.targets = append(p.targets, t)
			}
		}
		out = append(out, p)
	}
	return out
}

// concG is a concurrency pair's goroutine suffix: "-g8" on a pair run
// from 8 goroutines; a name without one ran from 64.
var concG = regexp.MustCompile(`-g(\d+)$`)

// splitConc names a concurrency pair's operation and series: the pair's
// name without its goroutine suffix, and "G=<goroutines>".
func splitConc(name string) (op, series string) {
	if m := concG.FindStringSubmatchIndex(name); m != nil {
		return name[:m[0]], "G=" + name[m[2]:m[3]]
	}
	return name, "G=64"
}

// targetSteps is a baseline's target over the panel's x range: constant
// around each measured count, changing half-way (on the log scale) between
// two counts whose targets differ.
func targetSteps(family, pairName, base string, pts []point) targetLine {
	if base == "hand-written" { // the pair is named by its operation alone
		pairName = strings.TrimSuffix(pairName, "-vs-hand-written")
	}
	t := targetLine{name: base}
	for i, p := range pts {
		v, ok := target(family, p.tenants, pairName)
		if !ok {
			continue
		}
		from, to := panelXMin, panelXMax
		if i > 0 {
			from = math.Sqrt(float64(pts[i-1].tenants) * float64(p.tenants))
		}
		if i < len(pts)-1 {
			to = math.Sqrt(float64(p.tenants) * float64(pts[i+1].tenants))
		}
		t.steps = append(t.steps, step{from: from, to: to, target: v})
	}
	return t
}

func median(v []float64) float64 {
	v = slices.Sorted(slices.Values(v))
	m := len(v) / 2
	if len(v)%2 == 0 { // an even count: the mean of the middle two
		return (v[m-1] + v[m]) / 2
	}
	return v[m]
}

// figure is one PNG of small multiples.
type figure struct {
	path   string
	title  string
	lines  string // what the figure is drawn from, for the message when there is none
	panels []panel
	ratio  bool
}

// figures are the three figures a bench log gives; a figure with no panels
// is not drawn.
func figures(l benchLog, costsPath, scalePath, concPath string) []figure {
	return []figure{
		{path: costsPath, title: "Cost per operation against tenant count (ours solid, baselines dashed)", lines: "scale-cost", panels: costPanels(l.costs)},
		{path: scalePath, title: "Scale pairs: ratio ours / baseline, 95% interval, against its target (dotted)", lines: "ratio S<tenants>-", panels: ratioPanels(l.ratios, "S"), ratio: true},
		{path: concPath, title: "Concurrency pairs: ratio ours / baseline, 95% interval, against its target (dotted)", lines: "ratio C<tenants>-", panels: ratioPanels(l.ratios, "C"), ratio: true},
	}
}

const (
	cols        = 4
	panelWidth  = 7 * vg.Centimeter
	panelHeight = 5.5 * vg.Centimeter
	legendWidth = 4.5 * vg.Centimeter
	titleHeight = 1 * vg.Centimeter
	dpi         = 120
)

// styles gives every curve name one colour and one marker across the
// figure, so that the shared legend reads for every panel; "ours" is black
// circles.
func styles(panels []panel) ([]string, map[string]style) {
	names := map[string]bool{}
	for _, p := range panels {
		for _, s := range p.series {
			names[s.name] = true
		}
	}
	delete(names, "ours")
	order := slices.Sorted(maps.Keys(names))
	out := map[string]style{"ours": {color.Black, draw.CircleGlyph{}}}
	for i, n := range order {
		out[n] = style{palette[i%len(palette)], shapes[i%len(shapes)]}
	}
	return order, out
}

type style struct {
	color color.Color
	shape draw.GlyphDrawer
}

var (
	dash = []vg.Length{vg.Points(5), vg.Points(3)}
	dot  = []vg.Length{vg.Points(1.5), vg.Points(2)}
)

// plotPanel draws one panel's plot.
func plotPanel(p panel, styleOf map[string]style, ratio bool) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.title
	pl.Title.TextStyle.Font.Size = vg.Points(10)
	pl.X.Label.Text = "tenants"
	pl.Y.Label.Text = p.unit
	for _, a := range []*plot.Axis{&pl.X, &pl.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(8)
		a.Tick.Label.Font.Size = vg.Points(8)
	}
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 1, Label: "1"}, {Value: 10}, {Value: 100}, {Value: 1000, Label: "1,000"}, {Value: 10000, Label: "10,000"}})
	pl.X.Min, pl.X.Max = panelXMin, panelXMax
	pl.Add(plotter.NewGrid())
	for _, t := range p.targets {
		var pts plotter.XYs
		for _, st := range t.steps {
			pts = append(pts, plotter.XY{X: st.from, Y: st.target}, plotter.XY{X: st.to, Y: st.target})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		line.Color, line.Dashes, line.Width = styleOf[t.name].color, dot, vg.Points(1.2)
		pl.Add(line)
	}
	// Backwards, so that the route's curve (the first) is drawn over the
	// baselines it often coincides with.
	for _, s := range slices.Backward(p.series) {
		st := styleOf[s.name]
		c := st.color
		line, points, err := plotter.NewLinePoints(xys(s.points, p.scale))
		if err != nil {
			return nil, err
		}
		line.Color, points.Color, line.Width = c, c, vg.Points(1.2)
		points.Shape, points.Radius = st.shape, vg.Points(2.5)
		if s.dashed {
			line.Dashes = dash
		}
		pl.Add(line, points)
		if ratio {
			bars, err := plotter.NewYErrorBars(errorPoints(s.points))
			if err != nil {
				return nil, err
			}
			bars.Color, bars.CapWidth, bars.Width = c, vg.Points(6), vg.Points(1.2)
			pl.Add(bars)
		}
	}
	if ratio {
		pl.Y.Tick.Marker = ratioTicks{}
		// Room around the bars and targets; a panel of equal values would
		// have an empty range.
		pad := max((pl.Y.Max-pl.Y.Min)*0.1, 0.05)
		pl.Y.Min, pl.Y.Max = math.Max(0, pl.Y.Min-pad), pl.Y.Max+pad
	} else {
		// Costs from zero: the panel shows how a cost grows with the
		// tenants; how ours compares with a baseline is the ratio
		// figure's to show.
		pl.Y.Min, pl.Y.Max = 0, pl.Y.Max*1.1
	}
	pl.X.Min, pl.X.Max = panelXMin, panelXMax
	return pl, nil
}

// ratioTicks labels a ratio axis to two decimals: the default ticker's
// fewer digits labelled 1.05 and 1.10 both "1.1".
type ratioTicks struct{}

func (ratioTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', 2, 64)
		}
	}
	return ts
}

func xys(pts []point, scale float64) plotter.XYs {
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i] = plotter.XY{X: float64(p.tenants), Y: p.y / scale}
	}
	return out
}

// errorPoints are a series' points with their intervals, for
// plotter.NewYErrorBars; a point without an interval gets a bar of nothing.
type errorPoints []point

func (e errorPoints) Len() int                    { return len(e) }
func (e errorPoints) XY(i int) (float64, float64) { return float64(e[i].tenants), e[i].y }
func (e errorPoints) YError(i int) (float64, float64) {
	if !e[i].interval {
		return 0, 0
	}
	return e[i].y - e[i].lo, e[i].hi - e[i].y
}

// save draws the figure: the title on top, the panels in a grid, and one
// legend for every panel in a column of its own at the right, outside the
// data.
func (f figure) save() error {
	rows := (len(f.panels) + cols - 1) / cols
	nc := min(cols, len(f.panels))
	w := vg.Length(nc)*panelWidth + legendWidth
	h := vg.Length(rows)*panelHeight + titleHeight
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	dc := draw.New(img)

	order, styleOf := styles(f.panels)
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, nc)
	}
	for i, p := range f.panels {
		pl, err := plotPanel(p, styleOf, f.ratio)
		if err != nil {
			return err
		}
		grid[i/nc][i%nc] = pl
	}
	panels := draw.Crop(dc, 0, -legendWidth, 0, -titleHeight)
	tiles := draw.Tiles{Rows: rows, Cols: nc, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	cs := plot.Align(grid, tiles, panels)
	for r := range grid {
		for c, pl := range grid[r] {
			if pl != nil {
				pl.Draw(cs[r][c])
			}
		}
	}

	title := font.From(plot.DefaultFont, vg.Points(12))
	sty := draw.TextStyle{Color: color.Black, Font: title, XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
	dc.FillText(sty, vg.Point{X: w / 2, Y: h - titleHeight/2}, f.title)

	leg := plot.NewLegend()
	leg.Left, leg.Top = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.ThumbnailWidth = vg.Points(24)
	leg.Padding = vg.Points(3)
	names := order
	if !f.ratio {
		names = append([]string{"ours"}, order...)
	}
	for _, n := range names {
		st := styleOf[n]
		line, points, err := plotter.NewLinePoints(plotter.XYs{{}})
		if err != nil {
			return err
		}
		line.Color, line.Width = st.color, vg.Points(1.2)
		points.Color, points.Shape, points.Radius = st.color, st.shape, vg.Points(2.5)
		if n != "ours" && !f.ratio {
			line.Dashes = dash
		}
		label := n
		switch {
		case f.ratio && strings.HasPrefix(n, "G="): // a concurrency pair's goroutine count
		case f.ratio:
			label = "vs " + n
		case n != "ours":
			label = n + " (baseline)"
		}
		leg.Add(label, line, points)
	}
	if f.ratio {
		t := plotter.NewFunction(func(float64) float64 { return 0 })
		t.Color, t.Dashes, t.Width = color.Gray{Y: 0x60}, dot, vg.Points(1.2)
		leg.Add("target (its colour)", t)
	}
	leg.Draw(draw.Crop(dc, w-legendWidth+vg.Millimeter*2, 0, 0, -titleHeight-vg.Millimeter*4))

	out, err := os.Create(f.path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, color.RGBA{0xbc, 0xbd, 0x22, 0xff},
	color.RGBA{0x17, 0xbe, 0xcf, 0xff},
}

var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{},
}
