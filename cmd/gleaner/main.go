// Command gleaner imports datasets, builds indexes, runs queries and
// evaluates retrieval methods.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "gleaner:", err)
		if hint := cliHint(err); hint != "" {
			fmt.Fprintln(os.Stderr, "  hint:", hint)
		}
		os.Exit(1)
	}
}

// cliHint names the command that fixes a store error. What an index lacks
// (index.MissingError: a section, edges, a head) says in its own message
// how to build it, in words its package wrote.
func cliHint(err error) string {
	switch {
	case errors.Is(err, store.ErrVersion):
		return "rebuild it with `gleaner index <corpus> -o <dir>`"
	case errors.Is(err, store.ErrNotOurs) || errors.Is(err, corpus.ErrNotCorpus):
		return "choose an empty or new -o folder; gleaner never replaces a folder it did not write"
	}
	return ""
}

type globals struct {
	logLevel string
	backend  string
	device   int
	log      *slog.Logger
	be       engine.Backend // opened from --backend before any command runs
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "gleaner",
		Short:         "Fast graph retrieval for RAG: import, index, query, evaluate",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			g.log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl}))
			slog.SetDefault(g.log)
			be, err := openBackend(backendName(g.backend), g.device, cmd.Flags().Changed("device"))
			if err != nil {
				return err
			}
			g.be = be
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "structured log lines on stderr at this level and above: debug, info, warn, error (progress bars show on a terminal whatever the level)")
	root.PersistentFlags().StringVar(&g.backend, "backend", "", "compute backend: cpu or cuda (default: $"+envBackend+", else cpu)")
	root.PersistentFlags().IntVar(&g.device, "device", 0, "GPU ordinal for --backend cuda (0: the first)")
	root.AddCommand(newImport(g), newChunk(g), newIndex(g), newGraph(g), newTrain(g), newModel(g), newQuery(g), newAnswer(g), newEval(g), newTune(g), newDemo(g), newServe(g), newKeys(), newAdd(g), newDelete(g), newCheckpoint(g), newRefresh(g))
	root.SetFlagErrorFunc(suggestFlag)
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
