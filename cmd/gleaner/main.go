// Command gleaner imports datasets, builds indexes, runs queries and
// evaluates retrieval methods.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/engine"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "gleaner:", err)
		os.Exit(1)
	}
}

type globals struct {
	logLevel string
	backend  string
	log      *slog.Logger
	be       engine.Backend // opened from --backend before any command runs
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "gleaner",
		Short:         "Fast graph retrieval for RAG: import, index, query, evaluate",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			g.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			slog.SetDefault(g.log)
			be, err := engine.Open(backendName(g.backend))
			if err != nil {
				return fmt.Errorf("--backend: %w", err)
			}
			g.be = be
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.backend, "backend", "", "compute backend: cpu or cuda (default: $"+envBackend+", else cpu)")
	root.AddCommand(newImport(g), newIndex(g), newGraph(g), newTrain(g), newModel(g), newQuery(g), newEval(g), newDemo(g))
	return root
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
