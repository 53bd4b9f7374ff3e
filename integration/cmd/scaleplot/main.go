// Command scaleplot draws docs/img/scale.png from the output of `make
// bench`: the cost of one operation against the tenant count, on log
// scales, for each scale pair's route ("ours") and each baseline. It reads
// the "scale-cost S<tenants>-<name> ours_ns=<x> base_ns=<y>" lines the
// ratio tests print. It lives in the integration module so that the
// plotting library stays out of the library's go.mod and import graph.
//
//	go run ./cmd/scaleplot -in /tmp/tenantwire-bench.log -out ../docs/img/scale.png
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image/color"
	"io"
	"log"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func main() {
	in := flag.String("in", "/tmp/tenantwire-bench.log", "bench output to read")
	out := flag.String("out", "docs/img/scale.png", "PNG to write")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	costs, err := parse(f)
	if err != nil {
		log.Fatal(err)
	}
	if len(costs) == 0 {
		log.Fatalf("scaleplot: no scale-cost lines in %s", *in)
	}
	p, err := draw1(series(costs))
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Save(22*vg.Centimeter, 15*vg.Centimeter, *out); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("scaleplot: %d measurements drawn to %s\n", len(costs), *out)
}

// cost is one scale-cost line.
type cost struct {
	tenants        int
	name           string // such as "pg-namespace-get-vs-hand"
	oursNs, baseNs float64
}

var costLine = regexp.MustCompile(`^scale-cost S(\d+)-(\S+) ours_ns=([0-9.]+) base_ns=([0-9.]+)$`)

// parse reads the scale-cost lines of r, ignoring every other line.
func parse(r io.Reader) ([]cost, error) {
	var out []cost
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := costLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		ours, _ := strconv.ParseFloat(m[3], 64)
		base, _ := strconv.ParseFloat(m[4], 64)
		out = append(out, cost{tenants: n, name: m[2], oursNs: ours, baseNs: base})
	}
	return out, sc.Err()
}

// series groups costs into curves: one per operation for the route (the
// median of its measurements at each tenant count, since every pair of an
// operation measures it again) and one per baseline. A pair named
// "<op>-vs-<baseline>" contributes to the curves "<op>" and
// "<op> / <baseline>"; a pair without "-vs-" to "<op>" and
// "<op> / hand-written"; "<op>-vs-1-tenant" (the route at one tenant) adds
// a point at 1 to "<op>". A start-up pair ("...-start") is left out.
func series(costs []cost) map[string]map[int]float64 {
	samples := map[string]map[int][]float64{}
	add := func(curve string, n int, ns float64) {
		if samples[curve] == nil {
			samples[curve] = map[int][]float64{}
		}
		samples[curve][n] = append(samples[curve][n], ns)
	}
	for _, c := range costs {
		if strings.HasSuffix(c.name, "-start") {
			// A start-up's whole time (seconds), not the cost of one
			// operation: on the same axis it would flatten every curve.
			continue
		}
		op, base, ok := strings.Cut(c.name, "-vs-")
		if !ok {
			base = "hand-written"
		}
		add(op+" (ours)", c.tenants, c.oursNs)
		if base == "1-tenant" {
			// The route against itself at one tenant: a point of its own curve.
			add(op+" (ours)", 1, c.baseNs)
			continue
		}
		add(op+" / "+base, c.tenants, c.baseNs)
	}
	out := map[string]map[int]float64{}
	for curve, byN := range samples {
		out[curve] = map[int]float64{}
		for n, v := range byN {
			slices.Sort(v)
			m := len(v) / 2
			if len(v)%2 == 0 { // an even count: the mean of the middle two
				out[curve][n] = (v[m-1] + v[m]) / 2
			} else {
				out[curve][n] = v[m]
			}
		}
	}
	return out
}

// draw1 plots the curves: microseconds per operation against tenants,
// both on log scales; the route's curves solid, the baselines dashed.
func draw1(curves map[string]map[int]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Cost per operation against tenant count"
	p.X.Label.Text = "tenants"
	p.Y.Label.Text = "µs per operation"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	names := slices.Sorted(maps.Keys(curves))
	for i, name := range names {
		byN := curves[name]
		ns := slices.Sorted(maps.Keys(byN))
		xys := make(plotter.XYs, len(ns))
		for j, n := range ns {
			xys[j] = plotter.XY{X: float64(n), Y: byN[n] / 1000}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		c := palette[i%len(palette)]
		line.Color, points.Color = c, c
		points.Shape = draw.GlyphDrawer(shapes[i%len(shapes)])
		if !strings.HasSuffix(name, "(ours)") {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(line, points)
		p.Legend.Add(name, line, points)
	}
	return p, nil
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, color.RGBA{0xbc, 0xbd, 0x22, 0xff},
	color.RGBA{0x17, 0xbe, 0xcf, 0xff},
}

var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}
