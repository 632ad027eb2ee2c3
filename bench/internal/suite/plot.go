package suite

import (
	"bufio"
	"fmt"
	"html"
	"math"
	"os"
)

// WritePlot draws the scaling tables, cost per operation against N on log
// scales with a line per backend, as an SVG file at name: one panel a
// table, two to a row. It reports false, and writes nothing, when the run
// has no scaling table.
//
// The drawing is a few dozen SVG elements written here, not a plotting
// library's: such a library and its fonts cost the test run more to
// compile than all of this module's own code.
func WritePlot(res *Results, name string) (bool, error) {
	var tables []*Table
	for _, t := range res.Tables {
		if t.kind == kindScaling && len(t.Rows) > 0 {
			tables = append(tables, t)
		}
	}
	if len(tables) == 0 {
		return false, nil
	}
	// One colour per line label across all panels.
	colors := map[string]string{}
	for _, t := range tables {
		for _, s := range t.Series() {
			if _, ok := colors[seriesLabel(s)]; !ok {
				colors[seriesLabel(s)] = palette[len(colors)%len(palette)]
			}
		}
	}
	cols := min(2, len(tables))
	rows := (len(tables) + cols - 1) / cols
	f, err := os.Create(name)
	if err != nil {
		return false, err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n",
		cols*panelW, rows*panelH)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, t := range tables {
		drawPanel(w, t, colors, float64(i%cols*panelW), float64(i/cols*panelH))
	}
	fmt.Fprintln(w, "</svg>")
	if err := w.Flush(); err != nil {
		f.Close()
		return false, err
	}
	return true, f.Close()
}

// A panel's size, and its plotting area's margins, in pixels.
const (
	panelW, panelH           = 480, 384
	marginL, marginR         = 64, 150 // the legend sits on the right
	marginT, marginB         = 34, 44
	plotW, plotH     float64 = panelW - marginL - marginR, panelH - marginT - marginB
)

// palette holds distinguishable line colours.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

func seriesLabel(s *Series) string {
	label := s.Rows[0].Backend
	if s.Rows[0].Where != Memory {
		label += " (" + s.Rows[0].Where + ")"
	}
	return label
}

// decades returns the powers of ten that bound the positive values vs.
func decades(vs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if lo > hi {
		return 1, 10
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	if lo == hi {
		hi *= 10
	}
	return lo, hi
}

// drawPanel draws t's lines in the panel whose top left corner is x0, y0.
func drawPanel(w *bufio.Writer, t *Table, colors map[string]string, x0, y0 float64) {
	series := t.Series()
	var xs, ys []float64
	for _, s := range series {
		for j, n := range s.N {
			if s.PerOp[j] > 0 {
				xs, ys = append(xs, float64(n)), append(ys, s.PerOp[j])
			}
		}
	}
	xlo, xhi := decades(xs)
	ylo, yhi := decades(ys)
	left, top := x0+marginL, y0+marginT
	px := func(v float64) float64 {
		return left + plotW*math.Log10(v/xlo)/math.Log10(xhi/xlo)
	}
	py := func(v float64) float64 {
		return top + plotH - plotH*math.Log10(v/ylo)/math.Log10(yhi/ylo)
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="12" font-weight="bold">%s</text>`+"\n",
		x0+8, y0+18, html.EscapeString(t.Title+": cost per "+t.Unit))
	// The grid and the ticks, one a decade.
	for v := xlo; v <= xhi*1.0001; v *= 10 {
		x := px(v)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, top+plotH)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, top+plotH+14, tick(v))
	}
	for v := ylo; v <= yhi*1.0001; v *= 10 {
		y := py(v)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, y+4, tick(v))
	}
	fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, top, plotW, plotH)
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">N, entries (log scale)</text>`+"\n", left+plotW/2, top+plotH+32)
	fmt.Fprintf(w, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n",
		x0+14, top+plotH/2, html.EscapeString("ns per "+t.Unit+" (log scale)"))
	// The lines: ours solid and wider, the alternatives dashed.
	ly := top + 4
	for _, s := range series {
		var pts [][2]float64
		for j, n := range s.N {
			if s.PerOp[j] > 0 {
				pts = append(pts, [2]float64{px(float64(n)), py(s.PerOp[j])})
			}
		}
		if len(pts) == 0 {
			continue
		}
		c := colors[seriesLabel(s)]
		style := `stroke-width="1.5" stroke-dasharray="4 2"`
		if s.Ours {
			style = `stroke-width="2.5"`
		}
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" %s points="`, c, style)
		for i, p := range pts {
			if i > 0 {
				w.WriteByte(' ')
			}
			fmt.Fprintf(w, "%.1f,%.1f", p[0], p[1])
		}
		w.WriteString("\"/>\n")
		for _, p := range pts {
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", p[0], p[1], c)
		}
		lx := left + plotW + 10
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" %s/>`+"\n", lx, ly, lx+18, ly, c, style)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+22, ly+4, html.EscapeString(seriesLabel(s)))
		ly += 15
	}
}

// tick labels a power of ten: 1, 10, 100, 1k, 10k, ... 1M, ...
func tick(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
