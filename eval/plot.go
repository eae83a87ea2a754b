package eval

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// SweepPoint is one method at one budget b_max.
type SweepPoint struct {
	Method   string  `json:"method"`
	BMax     int     `json:"bmax"`
	Recall   float64 `json:"recall_cap@10"`
	TR       float64 `json:"tr@10"`
	MedianMS float64 `json:"median_ms"`
}

var palette = []color.RGBA{{0xd6, 0x27, 0x28, 0xff}, {0x1f, 0x77, 0xb4, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0x94, 0x67, 0xbd, 0xff}}

// WritePlots writes FastInsight's Figure 4 (R@10 against median query time,
// one line per method over b_max) to prefix-pareto.{png,svg} and its
// Figure 6 (TR@10 against b_max) to prefix-tr.{png,svg}.
func WritePlots(prefix string, pts []SweepPoint) error {
	byMethod := map[string][]SweepPoint{}
	var names []string
	for _, p := range pts {
		if _, ok := byMethod[p.Method]; !ok {
			names = append(names, p.Method)
		}
		byMethod[p.Method] = append(byMethod[p.Method], p)
	}
	sort.Strings(names)
	pareto := newPlot("Recall@10 against query time (b_max = 10 … 100)", "median query time (ms)", "R@10 (capped)")
	tr := newPlot("Topological Recall against b_max", "b_max", "TR@10")
	for i, name := range names {
		ps := byMethod[name]
		sort.Slice(ps, func(a, b int) bool { return ps[a].BMax < ps[b].BMax })
		xy, tb := make(plotter.XYs, len(ps)), make(plotter.XYs, len(ps))
		for j, p := range ps {
			xy[j] = plotter.XY{X: p.MedianMS, Y: p.Recall}
			tb[j] = plotter.XY{X: float64(p.BMax), Y: p.TR}
		}
		if err := addLine(pareto, name, xy, palette[i%len(palette)]); err != nil {
			return err
		}
		if err := addLine(tr, name, tb, palette[i%len(palette)]); err != nil {
			return err
		}
	}
	for _, out := range []struct {
		p    *plot.Plot
		name string
	}{{pareto, prefix + "-pareto"}, {tr, prefix + "-tr"}} {
		for _, ext := range []string{".png", ".svg"} {
			if err := out.p.Save(7*vg.Inch, 5*vg.Inch, out.name+ext); err != nil {
				return fmt.Errorf("eval: plot %s: %w", out.name+ext, err)
			}
		}
	}
	return nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Add(plotter.NewGrid())
	p.Legend.Top = false // bottom right: the curves rise to the top right
	return p
}

func addLine(p *plot.Plot, name string, xy plotter.XYs, c color.RGBA) error {
	l, s, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	l.Color, s.Color = c, c
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}
