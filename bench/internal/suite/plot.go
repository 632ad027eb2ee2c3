package suite

import (
	"image/color"
	"io"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WritePlot draws the scaling tables, cost per operation against N on log
// scales with a line per backend, into an SVG file at name (PNG if name
// ends in .png). It reports
// false, and writes nothing, when the run has no scaling table.
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
	cols := min(2, len(tables))
	rows := (len(tables) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	// One colour per line label across all panels.
	colors := map[string]color.Color{}
	for _, t := range tables {
		for _, s := range t.Series() {
			if _, ok := colors[seriesLabel(s)]; !ok {
				colors[seriesLabel(s)] = palette[len(colors)%len(palette)]
			}
		}
	}
	for i, t := range tables {
		p, err := scalingPlot(t, colors)
		if err != nil {
			return false, err
		}
		plots[i/cols][i%cols] = p
	}
	width, height := vg.Length(cols)*5*vg.Inch, vg.Length(rows)*4*vg.Inch
	var img interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(name, ".png") {
		img = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	} else {
		img = vgsvg.New(width, height)
	}
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(name)
	if err != nil {
		return false, err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return false, err
	}
	return true, f.Close()
}

// palette holds distinguishable line colours.
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff},
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff},
	color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

func seriesLabel(s *Series) string {
	label := s.Rows[0].Backend
	if s.Rows[0].Where != Memory {
		label += " (" + s.Rows[0].Where + ")"
	}
	return label
}

func scalingPlot(t *Table, colors map[string]color.Color) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = t.Title + ": cost per " + t.Unit
	p.X.Label.Text = "N, entries (log scale)"
	p.Y.Label.Text = "ns per " + t.Unit + " (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	maxN := 0.0
	for _, s := range t.Series() {
		var xys plotter.XYs
		for j, n := range s.N {
			if s.PerOp[j] > 0 {
				xys = append(xys, plotter.XY{X: float64(n), Y: s.PerOp[j]})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		c := colors[seriesLabel(s)]
		line.Color, points.Color = c, c
		line.Width = vg.Points(1.5)
		if s.Ours {
			line.Width = vg.Points(2.5)
		} else {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(seriesLabel(s), line, points)
		maxN = max(maxN, xys[len(xys)-1].X)
	}
	// Room on the right for the legend, clear of the lines.
	p.X.Max = maxN * 12
	return p, nil
}
