package main

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotP50 draws each method's p50 against N on log–log axes.
func plotP50(path string, rows []sizeRow) error {
	p := plot.New()
	p.Title.Text = "gleaner p50 per query against corpus size (scale corpus)"
	p.X.Label.Text = "passages"
	p.Y.Label.Text = "p50 ms"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	for j, m := range rows[0].methods {
		xy := make(plotter.XYs, len(rows))
		for i, r := range rows {
			xy[i] = plotter.XY{X: float64(r.n), Y: max(r.methods[j].p50, 1e-3)}
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, s.Color = plotutil.Color(j), plotutil.Color(j)
		s.Shape = plotutil.Shape(j)
		p.Add(l, s)
		p.Legend.Add(m.name, l, s)
	}
	p.Legend.Top = true
	return p.Save(7*vg.Inch, 5*vg.Inch, path)
}
