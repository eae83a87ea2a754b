package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

func newQuery(g *globals) *cobra.Command {
	var dir, method, biEncoder, pooling, groupBy, profile string
	var sf *settingFlags
	var k int
	var withContext bool
	var filterJSON string
	cmd := &cobra.Command{
		Use: "query --index <dir> [--method bm25] [-k 10] <text...>",
		Example: `  gleaner query --index idx/scifact "vitamin D and bone density"
  gleaner query --index idx/2wiki --graph-kind mentions --method ppr -k 5 "Where did the performer of Respect die?"
  gleaner query --index idx/2wiki --graph-kind mentions --method fastinsight --first-stage hybrid "..."
  gleaner query --index idx/musique --method ketrag --context --budget 2000 "Who founded the label of ...?"`,
		Short: "Run one query and print the ranked nodes with scores and titles",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("query needs the query text after the flags; usage: %s", cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return fmt.Errorf("--index is required")
			}
			sf.log = g.log
			if err := sf.useProfile(profile, dir, &method, &groupBy, "method"); err != nil {
				return err
			}
			if k <= 0 {
				return fmt.Errorf("-k must be positive, got %d", k)
			}
			if err := retrieve.CheckGroupBy(groupBy); err != nil {
				return fmt.Errorf("--group-by: %w", err)
			}
			var allow []string
			budget := contextBudget
			if withContext {
				allow = []string{"budget"} // the context's size, for every method
				if cmd.Flags().Changed("k") {
					return fmt.Errorf("-k does not apply with --context: the context's size is --budget tokens")
				}
				if err := parseBudget(sf, &budget); err != nil {
					return err
				}
			}
			early := []string{method} // every flag before the index is read
			if method == retrieve.Auto {
				early = retrieve.AutoMethods
			}
			if _, err := sf.configs(retrieve.NewConfig, early, allow...); err != nil {
				return err
			}
			ix, err := openIndex(g, dir, biEncoder, pooling)
			if err != nil {
				return err
			}
			defer ix.Close()
			if method == retrieve.Auto {
				sf.profile = retrieve.DefaultProfile(ix) // under any setting flag given
				method = sf.profile.Method
			}
			cfgs, err := sf.configs(retrieve.NewConfig, []string{method}, allow...)
			if err != nil {
				return err
			}
			m, err := newMethod(g, ix, cfgs[0])
			if err != nil {
				return err
			}
			defer retrieve.CloseAll(context.Background(), m)
			q := retrieve.Query{Text: strings.Join(args, " ")}
			if q.Allow, err = filterFlag(ix, filterJSON); err != nil {
				return err
			}
			if withContext {
				return printContext(cmd, m, ix, q, budget)
			}
			start := time.Now()
			hits, err := retrieveGrouped(cmd.Context(), m, ix, q, k, groupBy)
			if err != nil {
				return err
			}
			el := time.Since(start)
			printHits(cmd.OutOrStdout(), ix, hits, groupBy)
			fmt.Fprintf(cmd.ErrOrStderr(), "%d results by %s in %v\n", len(hits), method, el.Round(time.Microsecond))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "index", "", "index folder")
	cmd.Flags().StringVar(&method, "method", retrieve.Auto, "retrieval method: auto (ppr over links and mentions edges when the index has them, else bm25; docs/choosing.md), "+strings.Join(retrieve.Names(), ", "))
	cmd.Flags().IntVarP(&k, "k", "k", 10, "number of results")
	cmd.Flags().StringVar(&profile, "profile", "", "a profile from gleaner tune: its method, settings and grouping (flags given win)")
	cmd.Flags().StringVar(&groupBy, "group-by", retrieve.GroupPassage, "passage, or document: rank documents by their best passage")
	cmd.Flags().StringVar(&filterJSON, "filter", "", `metadata filter as JSON, e.g. '{"field":"team","eq":"platform"}' (docs/serving.md#filters); only methods that support filters take one`)
	cmd.Flags().BoolVar(&withContext, "context", false, "print the LLM context instead of the ranking: ketrag's own, other methods' top nodes; --budget tokens")
	sf = addSettingFlags(cmd.Flags(), retrieve.Methods(), "--method")
	cmd.Flags().StringVar(&biEncoder, "bi-encoder", "", "the bi-encoder folder the index's vectors came from")
	cmd.Flags().StringVar(&pooling, "pooling", "mean", "bi-encoder pooling: mean or cls")
	return cmd
}

// printContext prints the method's context for q within budget tokens
// and, on stderr, its size by section.
func printContext(cmd *cobra.Command, m retrieve.Method, ix *index.Index, q retrieve.Query, budget int) error {
	start := time.Now()
	c, err := retrieve.BuildContext(cmd.Context(), m, ix, q, budget, contextDepth)
	if err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Fprintln(cmd.OutOrStdout(), c.Text)
	var parts []string
	for _, s := range c.Sections {
		parts = append(parts, fmt.Sprintf("%s %d rows / %d tokens", s.Name, s.Rows, s.Tokens))
	}
	sections := ""
	if len(parts) > 0 {
		sections = "; " + strings.Join(parts, ", ")
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "context by %s: %d of %d tokens (cl100k_base), %d chunks quoted%s; in %v\n",
		m.Name(), c.Tokens, budget, len(c.Nodes), sections, el.Round(time.Microsecond))
	return nil
}

// contextDepth is how many top nodes a ranking method offers a context.
const contextDepth = 1000

// contextBudget is --context's size without --budget: KET-RAG's λ.
const contextBudget = 12000

// parseBudget reads --budget as the context's size, for every method.
func parseBudget(sf *settingFlags, budget *int) error {
	text, ok := sf.overrides().Get("budget")
	if !ok {
		return nil
	}
	if _, err := fmt.Sscan(text, budget); err != nil || fmt.Sprint(*budget) != strings.TrimSpace(text) || retrieve.CheckBudget(*budget) != nil {
		return fmt.Errorf("--budget %q: want a token count in [1, %d]", text, retrieve.MaxContextBudget)
	}
	return nil
}

// newMethod makes a configured method on the CLI's backend, saying so when
// the method's work stays on the host whatever --backend is.
func newMethod(g *globals, ix *index.Index, cfg *retrieve.Config) (retrieve.Method, error) {
	noteHost(g, cfg.Name(), hostOf(retrieve.Methods(), cfg.Name()))
	return retrieve.New(ix, retrieve.Env{Backend: g.be, Logger: g.log}, cfg)
}

// hostOf is a component's Host note.
func hostOf(infos []retrieve.Info, name string) string {
	for _, i := range infos {
		if i.Name == name {
			return i.Host
		}
	}
	return ""
}

// noteHost tells, once per component, that --backend does not apply to
// work the component runs on the host.
func noteHost(g *globals, name, host string) {
	if host != "" && g.be != nil && g.be.Name() != "cpu" {
		g.log.Warn("--backend applies only in part", "backend", g.be.Name(), "component", name, "host", host)
	}
}

// retrieveGrouped ranks passages, or documents by their best passage.
func retrieveGrouped(ctx context.Context, m retrieve.Method, ix *index.Index, q retrieve.Query, k int, groupBy string) ([]retrieve.Hit, error) {
	if groupBy == retrieve.GroupDocument {
		return retrieve.RetrieveDocuments(ctx, m, ix, q, k)
	}
	return m.Retrieve(ctx, q, k)
}

// printHits prints a ranking as a table: documents by their best passage,
// or passages with their document when the index has documents.
func printHits(out io.Writer, ix *index.Index, hits []retrieve.Hit, groupBy string) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	defer w.Flush()
	switch {
	case groupBy == retrieve.GroupDocument:
		fmt.Fprintln(w, "rank\tscore\tdocument\ttitle\tbest passage")
		for i, h := range hits {
			v := int(h.Index)
			fmt.Fprintf(w, "%d\t%.4f\t%s\t%s\t%s\n", i+1, h.Score, ix.Document(v), ix.DocumentTitle(v), ix.NodeID(v))
		}
	case ix.HasDocuments():
		fmt.Fprintln(w, "rank\tscore\tid\tdocument\ttitle")
		for i, h := range hits {
			v := int(h.Index)
			fmt.Fprintf(w, "%d\t%.4f\t%s\t%s\t%s\n", i+1, h.Score, ix.NodeID(v), ix.Document(v), ix.Title(v))
		}
	default:
		fmt.Fprintln(w, "rank\tscore\tid\ttitle")
		for i, h := range hits {
			fmt.Fprintf(w, "%d\t%.4f\t%s\t%s\n", i+1, h.Score, ix.NodeID(int(h.Index)), ix.Title(int(h.Index)))
		}
	}
}

// filterFlag is --filter's set of nodes over ix (nil without the flag).
func filterFlag(ix *index.Index, text string) (*filter.Set, error) {
	if text == "" {
		return nil, nil
	}
	f, err := filter.Parse([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("--filter: %w", err)
	}
	return filter.Eval(ix, f)
}
