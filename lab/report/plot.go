// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
)

// Hand-written SVG charts: line charts (time series, sweeps) and grouped
// bar charts with error bars and reference markers (the paper's numbers).
// No dependency, deterministic output, readable in any browser and on
// GitHub.
//
// Why not a plotting library: gonum.org/v1/plot v0.17, the maintained Go
// one, was measured for the same job (a three-series line chart to SVG):
// its output is deterministic too (12 KB), but a program that draws one
// chart with it is 11.2 MB against 2.4 MB for an empty one (it compiles
// in the Liberation fonts for text metrics, and 35 gonum and x/ packages),
// which would more than double mptcp-lab (9.5 MB) for about 300 lines of
// code here; and our grouped bars with the paper's reference markers
// would still be custom plotters on top of it.

var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

// Series is one line.
type Series struct {
	Name    string
	X, Y    []float64
	Err     []float64 // symmetric error bars (optional)
	Dashed  bool
	Markers bool
}

// LineChart plots series against a shared x axis.
type LineChart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// XTicks, when set, makes the x axis categorical: X values are indices
	// into it.
	XTicks []string
}

// BarSeries is one bar per category.
type BarSeries struct {
	Name   string
	Values []float64
	Err    []float64 // symmetric error bars (NaN or missing: none)
	Ref    []float64 // reference marker per category (NaN or missing: none)
}

// BarChart is a grouped bar chart.
type BarChart struct {
	Title, YLabel string
	Categories    []string
	Series        []BarSeries
	RefName       string // legend entry of the reference markers
}

const (
	plotW, plotH                       = 820, 440
	marginL, marginR, marginT, marginB = 72, 190, 40, 64
)

type svgBuf struct{ bytes.Buffer }

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(&b.Buffer, format, args...) }

func header(b *svgBuf, title string) {
	b.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	b.f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	b.f(`<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", 8, html.EscapeString(title))
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	first, last := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	for k := first; k <= last; k++ {
		out = append(out, k*step)
	}
	return out
}

func fmtTick(v float64) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e6 || a < 1e-3:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

type frame struct {
	x0, x1, y0, y1 float64 // data ranges
	px0, px1       float64 // pixel x range
	py0, py1       float64 // pixel y range (py0 bottom)
}

func (fr frame) X(v float64) float64 { return fr.px0 + (v-fr.x0)/(fr.x1-fr.x0)*(fr.px1-fr.px0) }
func (fr frame) Y(v float64) float64 { return fr.py0 - (v-fr.y0)/(fr.y1-fr.y0)*(fr.py0-fr.py1) }

func axes(b *svgBuf, fr frame, xl, yl string, xticks []float64, xlabels []string, yticks []float64) {
	for _, t := range yticks {
		y := fr.Y(t)
		b.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", fr.px0, y, fr.px1, y)
		b.f(`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", fr.px0-6, y+4, fmtTick(t))
	}
	for i, t := range xticks {
		x := fr.X(t)
		label := fmtTick(t)
		if xlabels != nil {
			label = xlabels[i]
		}
		b.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", x, fr.py0, x, fr.py0+4)
		b.f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, fr.py0+17, html.EscapeString(label))
	}
	b.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", fr.px0, fr.py1, fr.px1-fr.px0, fr.py0-fr.py1)
	b.f(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", (fr.px0+fr.px1)/2, plotH-14, html.EscapeString(xl))
	b.f(`<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (fr.py0+fr.py1)/2, html.EscapeString(yl))
}

func legend(b *svgBuf, names []string, colors []string, dashed []bool, x float64) {
	y := float64(marginT + 8)
	for i, n := range names {
		if i >= 24 {
			b.f(`<text x="%.1f" y="%.1f">… %d more</text>`+"\n", x, y+4, len(names)-i)
			break
		}
		dash := ""
		if dashed != nil && dashed[i] {
			dash = ` stroke-dasharray="5,3"`
		}
		b.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`+"\n", x, y, x+18, y, colors[i], dash)
		b.f(`<text x="%.1f" y="%.1f">%s</text>`+"\n", x+24, y+4, html.EscapeString(n))
		y += 16
	}
}

// SVG renders the chart.
func (c LineChart) SVG() []byte {
	var b svgBuf
	header(&b, c.Title)
	x0, x1, y0, y1 := c.bounds()
	yt := niceTicks(y0, y1, 6)
	fr := frame{x0: x0, x1: x1, y0: yt[0], y1: yt[len(yt)-1], px0: marginL, px1: plotW - marginR, py0: plotH - marginB, py1: marginT}
	xt, xl := c.xTicks(x0, x1)
	axes(&b, fr, c.XLabel, c.YLabel, xt, xl, yt)
	var names, colors []string
	var dashed []bool
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		names, colors, dashed = append(names, s.Name), append(colors, col), append(dashed, s.Dashed)
		s.plot(&b, fr, col)
	}
	legend(&b, names, colors, dashed, plotW-marginR+14)
	b.f("</svg>\n")
	return b.Bytes()
}

// bounds is the range of the chart's data, error bars included; y starts
// at 0 or below.
func (c LineChart) bounds() (x0, x1, y0, y1 float64) {
	x0, x1, y0, y1 = math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			if math.IsNaN(s.Y[i]) {
				continue
			}
			x0, x1 = math.Min(x0, s.X[i]), math.Max(x1, s.X[i])
			hi, lo := s.Y[i], s.Y[i]
			if i < len(s.Err) && !math.IsNaN(s.Err[i]) {
				hi, lo = hi+s.Err[i], lo-s.Err[i]
			}
			y1, y0 = math.Max(y1, hi), math.Min(y0, lo)
		}
	}
	if math.IsInf(x0, 1) {
		x0, x1, y1 = 0, 1, 1
	}
	if c.XTicks != nil {
		x0, x1 = -0.5, float64(len(c.XTicks))-0.5
	}
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	return x0, x1, y0, y1
}

// xTicks are the chart's x ticks: its categories, or nice numbers in
// [x0, x1].
func (c LineChart) xTicks(x0, x1 float64) (xt []float64, xl []string) {
	if c.XTicks != nil {
		for i, l := range c.XTicks {
			xt = append(xt, float64(i))
			xl = append(xl, l)
		}
		return xt, xl
	}
	for _, t := range niceTicks(x0, x1, 8) {
		if t >= x0-1e-9 && t <= x1+1e-9 {
			xt = append(xt, t)
		}
	}
	return xt, nil
}

// plot draws the series as a line, with its error bars and markers.
func (s Series) plot(b *svgBuf, fr frame, col string) {
	var pts bytes.Buffer
	for j := range s.X {
		if math.IsNaN(s.Y[j]) {
			continue
		}
		fmt.Fprintf(&pts, "%.1f,%.1f ", fr.X(s.X[j]), fr.Y(s.Y[j]))
	}
	dash := ""
	if s.Dashed {
		dash = ` stroke-dasharray="5,3"`
	}
	b.f(`<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>`+"\n", col, dash, bytes.TrimSpace(pts.Bytes()))
	for j := range s.X {
		if math.IsNaN(s.Y[j]) {
			continue
		}
		x, y := fr.X(s.X[j]), fr.Y(s.Y[j])
		if j < len(s.Err) && s.Err[j] > 0 {
			lo, hi := fr.Y(s.Y[j]-s.Err[j]), fr.Y(s.Y[j]+s.Err[j])
			b.f(`<path d="M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f" stroke="%s"/>`+"\n", x, lo, hi, x-4, lo, x+4, x-4, hi, x+4, col)
		}
		if s.Markers {
			b.f(`<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x, y, col)
		}
	}
}

// SVG renders the chart.
func (c BarChart) SVG() []byte {
	var b svgBuf
	header(&b, c.Title)
	y1 := 0.0
	hasRef := false
	for _, s := range c.Series {
		for i, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			e := 0.0
			if i < len(s.Err) && !math.IsNaN(s.Err[i]) {
				e = s.Err[i]
			}
			y1 = math.Max(y1, v+e)
		}
		for _, r := range s.Ref {
			if !math.IsNaN(r) {
				y1 = math.Max(y1, r)
				hasRef = true
			}
		}
	}
	if y1 <= 0 {
		y1 = 1
	}
	yt := niceTicks(0, y1, 6)
	n := float64(len(c.Categories))
	fr := frame{x0: 0, x1: math.Max(n, 1), y0: 0, y1: yt[len(yt)-1], px0: marginL, px1: plotW - marginR, py0: plotH - marginB, py1: marginT}
	var xt []float64
	for i := range c.Categories {
		xt = append(xt, float64(i)+0.5)
	}
	axes(&b, fr, "", c.YLabel, xt, c.Categories, yt)
	ns := float64(max(len(c.Series), 1))
	groupW := (fr.px1 - fr.px0) / math.Max(n, 1) * 0.8
	barW := groupW / ns
	var names, colors []string
	for si, s := range c.Series {
		col := palette[si%len(palette)]
		names, colors = append(names, s.Name), append(colors, col)
		for i, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			x := fr.X(float64(i)+0.5) - groupW/2 + float64(si)*barW
			b.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x+1, fr.Y(v), barW-2, fr.Y(0)-fr.Y(v), col)
			cx := x + barW/2
			if i < len(s.Err) && s.Err[i] > 0 {
				lo, hi := fr.Y(math.Max(v-s.Err[i], 0)), fr.Y(v+s.Err[i])
				b.f(`<path d="M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f" stroke="#222"/>`+"\n", cx, lo, hi, cx-4, lo, cx+4, cx-4, hi, cx+4)
			}
			if i < len(s.Ref) && !math.IsNaN(s.Ref[i]) {
				y := fr.Y(s.Ref[i])
				b.f(`<path d="M%.1f %.1fl6 6l-6 6l-6 -6z" fill="white" stroke="#111" stroke-width="1.5"/>`+"\n", cx, y-6)
			}
		}
	}
	legendX := plotW - marginR + 14.0
	legend(&b, names, colors, nil, legendX)
	if hasRef {
		y := float64(marginT+8) + 16*float64(min(len(names), 25))
		name := c.RefName
		if name == "" {
			name = "paper"
		}
		b.f(`<path d="M%.1f %.1fl6 6l-6 6l-6 -6z" fill="white" stroke="#111" stroke-width="1.5"/>`+"\n", legendX+9, y-6)
		b.f(`<text x="%.1f" y="%.1f">%s</text>`+"\n", legendX+24, y+4, html.EscapeString(name))
	}
	b.f("</svg>\n")
	return b.Bytes()
}
