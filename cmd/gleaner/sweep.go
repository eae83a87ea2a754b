package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// sweep evaluates the methods at b_max = 10, 20, …, 100 and writes the
// plots.
func sweep(ctx context.Context, w io.Writer, g *globals, f *evalFlags, names []string, ix *index.Index, qs []corpus.Query, opt eval.Options) error {
	var pts []eval.SweepPoint
	opt.RunDir = ""
	fmt.Fprintf(w, "b_max sweep of %v (b_max is also GAR's budget and re2's depth; other methods do not change)\n", names)
	for bmax := 10; bmax <= 100; bmax += 10 {
		rep, err := sweepStep(ctx, g, f, names, ix, qs, opt, bmax)
		if err != nil {
			return err
		}
		for _, m := range rep.Methods {
			pts = append(pts, eval.SweepPoint{Method: m.Method, BMax: bmax, Recall: m.Metrics[eval.Name(eval.RecallCap, 10)],
				TR: m.Metrics[eval.Name(eval.TR, 10)], MedianMS: m.Latency.Median})
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\tb_max\trecall_cap@10\ttr@10\tp50 ms\t")
	for _, p := range pts {
		fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%.3f\t\n", p.Method, p.BMax, p.Recall, p.TR, p.MedianMS)
	}
	tw.Flush()
	if err := eval.WritePlots(f.plot, pts); err != nil {
		return err
	}
	fmt.Fprintf(w, "plots: %s-pareto.{png,svg}, %s-tr.{png,svg}\n", f.plot, f.plot)
	return nil
}

// sweepStep evaluates the methods with bmax set (as --bmax would).
func sweepStep(ctx context.Context, g *globals, f *evalFlags, names []string, ix *index.Index, qs []corpus.Query, opt eval.Options, bmax int) (*eval.Report, error) {
	ov := f.sf.overrides()
	ov.Set("bmax", fmt.Sprint(bmax))
	var ms []retrieve.Method
	defer func() { retrieve.CloseAll(context.Background(), ms...) }()
	for _, name := range names {
		cfg, err := retrieve.NewConfig(name)
		if err != nil {
			return nil, err
		}
		if err := ov.Apply(cfg); err != nil {
			return nil, flagError(err)
		}
		m, err := newMethod(g, ix, cfg)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return eval.Evaluate(ctx, ix, qs, ms, opt)
}
