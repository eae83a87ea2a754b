package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/index/wal"
)

// liveFlags are the flags add, delete and checkpoint share.
type liveFlags struct {
	dir, biEncoder, pooling string
	batch                   int
}

func (f *liveFlags) bind(cmd *cobra.Command) {
	f.bindIndex(cmd)
	cmd.Flags().IntVar(&f.batch, "batch", 256, "documents per commit (each commit is durable and all-or-nothing)")
}

// bindIndex binds the flags that name the index and its embedder.
func (f *liveFlags) bindIndex(cmd *cobra.Command) {
	f.batch = 256
	cmd.Flags().StringVar(&f.dir, "index", "", "the index to change (required); its update log is <index>.wal")
	cmd.Flags().StringVar(&f.biEncoder, "bi-encoder", "", "the bi-encoder folder the index's vectors came from (an index built with one)")
	cmd.Flags().StringVar(&f.pooling, "pooling", "mean", "the bi-encoder's pooling: mean or cls")
}

// open opens the index at --index for updates.
func (f *liveFlags) open(cmd *cobra.Command, g *globals) (*live.Writer, error) {
	if f.dir == "" {
		return nil, fmt.Errorf("--index <dir> is required")
	}
	if f.batch < 1 || f.batch > 1<<20 {
		return nil, fmt.Errorf("--batch %d: want 1 to %d", f.batch, 1<<20)
	}
	o := live.DefaultOptions(g.log)
	o.Refresh.Backend = g.be
	if f.biEncoder != "" {
		bi, err := openBiEncoder(g, f.biEncoder, f.pooling)
		if err != nil {
			return nil, err
		}
		o.Embedder = bi
	}
	return live.Open(cmd.Context(), f.dir, o)
}

func newAdd(g *globals) *cobra.Command {
	var f liveFlags
	var replace, skip bool
	files := corpus.DefaultFilesOptions()
	cmd := &cobra.Command{
		Use:   "add files|jsonl <path> --index <dir>",
		Short: "Add documents to an index in place (durable, no rebuild)",
		Long: `Add documents to an index in place: no rebuild, each commit durable in the index's
update log (<index>.wal) before it counts, the index folded up to date when the command ends.

  files  a folder read as 'gleaner import files' reads it: each file a document whose id is
         its path under the folder, cut into passages; links between its files become "links"
         edges. Add the folder you imported from (with --replace: unchanged files are
         skipped), so ids and links match.
  jsonl  a gleaner JSONL folder (nodes.jsonl, edges.jsonl) or one nodes .jsonl file: each
         node a document of its own unless its "doc" field names the document it was cut
         from; an edge travels with the document of its source and may point at any node
         of the index.

A document the index already has is an error unless --replace, which replaces it (and
skips it when nothing about it changed). Vectors of added passages come from the index's
model (LSA fold-in: the basis is not refitted; 'gleaner index refit' refits it in place).
BM25 follows exactly, as do the corpus's edges and the mentions graph (new titles are
found in old passages too). Structures derived from the whole index otherwise (the
Tri-Graph, KET-RAG's skeleton, the HNSW graph, knn edges) become stale: the methods that
use them refuse until they are built again, and vector search scans exactly meanwhile.
'gleaner index info' lists them; 'gleaner refresh' builds the Tri-Graph, the HNSW graph and a
locally extracted KET-RAG and knn edges again with their settings.`,
		Example: `  gleaner add files ~/notes --replace --index idx/notes
  gleaner add jsonl new-passages.jsonl --index idx/wiki`,
		Args: exactArgs(2, "a format (files or jsonl) and a path"),
		RunE: func(cmd *cobra.Command, args []string) error {
			files.SkipInvalid, files.Logger = skip, g.log
			c, err := readAdded(cmd, g, args[0], args[1], files, skip)
			if err != nil {
				return err
			}
			docs, err := live.Documents(c.Nodes, c.Edges)
			if err != nil {
				return fmt.Errorf("%s: %w", args[1], err)
			}
			w, err := f.open(cmd, g)
			if err != nil {
				return err
			}
			rep, err := addDocuments(cmd, w, docs, replace, f.batch)
			return finishLive(cmd, w, rep, err)
		},
	}
	f.bind(cmd)
	cmd.Flags().BoolVar(&replace, "replace", false, "replace documents the index already has (unchanged ones are skipped)")
	cmd.Flags().BoolVar(&skip, "skip-invalid", false, "warn about and leave out invalid records and bad files instead of failing (malformed JSON and repeated ids still fail)")
	cmd.Flags().StringSliceVar(&files.Include, "include", files.Include, "files: globs of the files to read")
	cmd.Flags().StringSliceVar(&files.Exclude, "exclude", nil, "files: globs of files and folders to leave out")
	cmd.Flags().BoolVar(&files.Hidden, "hidden", false, "files: read files and folders whose names start with '.'")
	cmd.Flags().IntVar(&files.MaxWords, "max-words", files.MaxWords, "files: most words in one passage")
	cmd.Flags().IntVar(&files.MinWords, "min-words", files.MinWords, "files: a heading starts a new passage only once the open one has this many words")
	cmd.Flags().Int64Var(&files.MaxFileBytes, "max-file-bytes", files.MaxFileBytes, "files: refuse larger files")
	return cmd
}

// readAdded reads the documents gleaner add was given.
func readAdded(cmd *cobra.Command, g *globals, format, path string, files corpus.FilesOptions, skip bool) (*corpus.Corpus, error) {
	switch format {
	case "files":
		c, rep, err := corpus.FromFiles(cmd.Context(), path, files)
		if err == nil {
			printFilesReport(cmd.OutOrStdout(), rep)
		}
		return c, err
	case "jsonl":
		return readJSONLNodes(path, corpus.ReadOptions{SkipInvalid: skip, Logger: g.log})
	}
	return nil, fmt.Errorf("unknown format %q (want files or jsonl)", format)
}

// readJSONLNodes reads a nodes file, or a folder's nodes.jsonl and
// edges.jsonl; edges may name nodes the index has, checked at commit.
func readJSONLNodes(path string, opt corpus.ReadOptions) (*corpus.Corpus, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	nodesPath, edgesPath := path, ""
	if st.IsDir() {
		nodesPath, edgesPath = filepath.Join(path, corpus.NodesFile), filepath.Join(path, corpus.EdgesFile)
	}
	c := &corpus.Corpus{}
	if c.Nodes, err = corpus.ReadNodes(nodesPath, opt); err != nil {
		return nil, err
	}
	if err := corpus.CheckDocuments(nodesPath, c.Nodes); err != nil {
		return nil, err
	}
	if edgesPath != "" {
		if _, err := os.Stat(edgesPath); err == nil {
			if c.Edges, err = corpus.ReadEdgesAnyEnd(edgesPath, opt); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// liveReport counts what a live command did.
type liveReport struct {
	added, replaced, unchanged, deleted, passages, commits int
	start                                                  time.Time
}

// addDocuments commits docs in batches of n, skipping unchanged ones
// when replacing.
func addDocuments(cmd *cobra.Command, w *live.Writer, docs []live.Document, replace bool, n int) (*liveReport, error) {
	rep := &liveReport{start: time.Now()}
	if !replace {
		if err := refuseExisting(w.Index(), docs); err != nil {
			return rep, err
		}
	}
	var b live.Batch
	var pend liveReport
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if _, err := w.Commit(cmd.Context(), &b); err != nil {
			return err
		}
		rep.added, rep.replaced, rep.passages = rep.added+pend.added, rep.replaced+pend.replaced, rep.passages+pend.passages
		rep.commits++
		pend, b = liveReport{}, live.Batch{}
		return nil
	}
	for _, d := range docs {
		ix := w.Index()
		exists := ix.DocumentSize(d.ID) > 0
		switch {
		case exists && !replace:
			return rep, fmt.Errorf("document %q: %w (pass --replace to replace it)", d.ID, live.ErrExists)
		case exists && live.Same(ix, d):
			rep.unchanged++
			continue
		case exists:
			b.Replace(d)
			pend.replaced++
		default:
			b.Add(d)
			pend.added++
		}
		pend.passages += len(d.Nodes)
		if b.Len() >= n {
			if err := flush(); err != nil {
				return rep, err
			}
		}
	}
	return rep, flush()
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// refuseExisting fails, before anything is committed, when the index
// already has some of docs.
func refuseExisting(ix *index.Index, docs []live.Document) error {
	var have []string
	for _, d := range docs {
		if ix.DocumentSize(d.ID) > 0 {
			have = append(have, strconv.Quote(d.ID))
		}
	}
	if len(have) == 0 {
		return nil
	}
	more := ""
	if len(have) > 5 {
		more = fmt.Sprintf(" and %d more", len(have)-5)
		have = have[:5]
	}
	return fmt.Errorf("documents %s%s: %w; nothing was added (pass --replace to replace them)", strings.Join(have, ", "), more, live.ErrExists)
}

// finishLive closes the writer (folding the log into the index) and
// prints what was done; err is what stopped the command, if anything.
func finishLive(cmd *cobra.Command, w *live.Writer, rep *liveReport, err error) error {
	st := w.Stats()
	stale := staleLine(w.Dir(), w.Index())
	cerr := w.Close()
	out := cmd.OutOrStdout()
	if rep != nil && (err == nil || rep.commits > 0) {
		fmt.Fprintf(out, "%s in %s, %.2f s: %d added, %d replaced (%s written), %d unchanged, %d deleted; the index has %s\n",
			plural(rep.added+rep.replaced+rep.deleted, "document"), plural(rep.commits, "commit"), time.Since(rep.start).Seconds(),
			rep.added, rep.replaced, plural(rep.passages, "passage"), rep.unchanged, rep.deleted, plural(st.Nodes, "passage"))
	}
	if stale != "" && (err == nil || rep != nil && rep.commits > 0) {
		fmt.Fprintln(out, stale) // not after a failure that committed nothing: it reads as if something was
	}
	if err != nil {
		if rep != nil && rep.commits > 0 {
			return fmt.Errorf("%w (the %d commits before it are in the index)", err, rep.commits)
		}
		return err
	}
	return cerr
}

func newDelete(g *globals) *cobra.Command {
	var f liveFlags
	var from string
	var missingOK bool
	cmd := &cobra.Command{
		Use:   "delete <document id>... --index <dir>",
		Short: "Delete documents (every passage cut from them) from an index in place",
		Long: `Delete documents from an index in place, durable in its update log before it counts.
An id names a document: a node that is its own document, or the document passages were
cut from ('gleaner import files' ids are paths under the folder). Ids come as arguments
or, with --from, one per line from a file ('-': standard input).`,
		Example: `  gleaner delete drafts/old.md --index idx/notes
  gleaner delete --from gone.txt --index idx/wiki`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := deleteIDs(cmd, args, from)
			if err != nil {
				return err
			}
			w, err := f.open(cmd, g)
			if err != nil {
				return err
			}
			rep, err := deleteDocuments(cmd, w, ids, missingOK, f.batch)
			return finishLive(cmd, w, rep, err)
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&from, "from", "", "read ids from this file, one per line ('-': standard input)")
	cmd.Flags().BoolVar(&missingOK, "missing-ok", false, "skip ids the index does not have instead of failing")
	return cmd
}

// deleteIDs gathers the ids to delete.
func deleteIDs(cmd *cobra.Command, args []string, from string) ([]string, error) {
	ids := append([]string(nil), args...)
	if from != "" {
		var r io.Reader = cmd.InOrStdin()
		if from != "-" {
			fh, err := os.Open(from)
			if err != nil {
				return nil, err
			}
			defer fh.Close()
			r = fh
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if id := strings.TrimSpace(sc.Text()); id != "" {
				ids = append(ids, id)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("--from %s: %w", from, err)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no ids to delete: give them as arguments or with --from")
	}
	return ids, nil
}

func deleteDocuments(cmd *cobra.Command, w *live.Writer, ids []string, missingOK bool, n int) (*liveReport, error) {
	rep := &liveReport{start: time.Now()}
	var b live.Batch
	pending := 0
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if _, err := w.Commit(cmd.Context(), &b); err != nil {
			return err
		}
		rep.deleted += pending
		rep.commits++
		pending, b = 0, live.Batch{}
		return nil
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if missingOK && w.Index().DocumentSize(id) == 0 {
			continue
		}
		b.Delete(id)
		pending++
		if b.Len() >= n {
			if err := flush(); err != nil {
				return rep, err
			}
		}
	}
	return rep, flush()
}

func newCheckpoint(g *globals) *cobra.Command {
	var f liveFlags
	cmd := &cobra.Command{
		Use:   "checkpoint --index <dir>",
		Short: "Fold an index's update log into the index (after a crash of a live writer)",
		Long: `Replay the index's update log (<index>.wal) and write the index up to date. A live
writer (gleaner serve --writes, gleaner add) does this itself when it stops; run this after
one was killed, so that commands that read the index alone see every acknowledged change.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := f.open(cmd, g)
			if err != nil {
				return err
			}
			st := w.Stats()
			if err := w.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "replayed %d log records; %s is up to date (%d passages)\n", st.Replayed, f.dir, st.Nodes)
			return nil
		},
	}
	f.bind(cmd)
	return cmd
}

// staleLine says what changes left stale and how to build it again ("":
// nothing).
func staleLine(dir string, ix *index.Index) string {
	s := ix.Meta.Stale
	if s == nil || len(s.Sections)+len(s.GraphKinds) == 0 {
		return ""
	}
	line := fmt.Sprintf("stale until built again: sections %v, edge kinds %v", s.Sections, s.GraphKinds)
	if r := ix.Refreshable(); len(r) > 0 {
		line += fmt.Sprintf("; gleaner refresh --index %s builds %s", dir, strings.Join(r, ", "))
	}
	return line + " (see gleaner index info)"
}

func newRefresh(g *globals) *cobra.Command {
	var f liveFlags
	cmd := &cobra.Command{
		Use:   "refresh --index <dir>",
		Short: "Build again what live changes left stale (Tri-Graph, HNSW, inverted file, quantized vectors, KET-RAG, knn edges)",
		Long: `Build again, with the settings they were built with, the sections that adds and deletes
left stale and that can be built from the index in memory (the Tri-Graph, the HNSW graph, the
inverted file, the quantized vectors, KET-RAG's structures when extracted locally, knn edges), and write the index with them; passages
that deletes left in place are renumbered away first. A server started with --writes does this by
itself once the writes pause (--refresh-after). Others
(KET-RAG extracted by an LLM, a trained SeedER encoder) are built with their own commands;
'gleaner index info' names them.`,
		Example: `  gleaner refresh --index idx/wiki`,
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if done, err := nothingToRefresh(cmd, f); done || err != nil {
				return err
			}
			w, err := f.open(cmd, g)
			if err != nil {
				return err
			}
			if n := w.Stats().Replayed; n > 0 { // the folder changed already, whatever the refresh finds
				fmt.Fprintf(cmd.OutOrStdout(), "replayed %s of the update log\n", plural(int(n), "record"))
			}
			start := time.Now()
			r, err := w.Refresh(cmd.Context())
			switch {
			case len(r.Built) > 0:
				fmt.Fprintf(cmd.OutOrStdout(), "built again: %s (%.1f s)\n", strings.Join(r.Built, ", "), time.Since(start).Seconds())
			case err == nil && r.Compacted == 0:
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to build again")
			}
			if r.Compacted > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "renumbered without %s the log's deletions left in place\n", plural(r.Compacted, "passage"))
			}
			return finishLive(cmd, w, nil, err)
		},
	}
	f.bindIndex(cmd)
	return cmd
}

// nothingToRefresh says so, and reports true, when the index at dir has
// no update log to replay and nothing a refresh can build (so that no
// writer, and no log, is opened for nothing).
func nothingToRefresh(cmd *cobra.Command, f liveFlags) (bool, error) {
	dir := f.dir
	if dir == "" || f.biEncoder != "" || wal.Exists(index.LogDir(dir)) {
		return false, nil // the writer replays, or embeds with the bi-encoder
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return false, err
	}
	defer ix.Close()
	if len(ix.Refreshable()) > 0 {
		return false, nil
	}
	fmt.Fprintln(cmd.OutOrStdout(), "nothing to build again")
	if line := staleLine(dir, ix); line != "" {
		fmt.Fprintln(cmd.OutOrStdout(), line)
	}
	return true, nil
}

func newIndexRefit(g *globals) *cobra.Command {
	var f liveFlags
	var refresh bool
	cmd := &cobra.Command{
		Use:   "refit --index <dir>",
		Short: "Fit the LSA basis again on an index's passages as they are now",
		Long: `Fit the index's LSA basis again on its passages as they are now and make every vector
anew from it, as 'gleaner index' does for a corpus: passages added in place are folded into
the basis fitted at build time, which drifts from the corpus as it changes. The vectors then
equal a rebuild's. What was derived from the vectors goes stale (the HNSW graph, the
Tri-Graph, KET-RAG's structures, a SeedER encoder, knn edges); --refresh (the default) builds
again those that 'gleaner refresh' can. The index is rewritten atomically; writes wait
meanwhile. Stop a server that serves the index with --writes first.`,
		Example: `  gleaner index refit --index idx/wiki`,
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRefittable(f.dir); err != nil {
				return err
			}
			w, err := f.open(cmd, g)
			if err != nil {
				return err
			}
			start := time.Now()
			if err := w.Refit(cmd.Context()); err != nil {
				return finishLive(cmd, w, nil, err)
			}
			ix := w.Index()
			fmt.Fprintf(cmd.OutOrStdout(), "refitted LSA: %d dimensions over %s (%.1f s); saved\n", ix.Meta.Dims, plural(ix.Live(), "passage"), time.Since(start).Seconds())
			if _, ok := ix.Meta.Sections["head"]; ok {
				fmt.Fprintln(cmd.OutOrStdout(), "the trained head was kept: it was trained on the old vectors' cosines (gleaner train head retrains it)")
			}
			if !refresh {
				return finishLive(cmd, w, nil, nil)
			}
			start = time.Now()
			r, err := w.Refresh(cmd.Context())
			if len(r.Built) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "built again: %s (%.1f s)\n", strings.Join(r.Built, ", "), time.Since(start).Seconds())
			}
			return finishLive(cmd, w, nil, err)
		},
	}
	f.bindIndex(cmd)
	cmd.Flags().BoolVar(&refresh, "refresh", true, "build again what the refit left stale and a refresh can build")
	return cmd
}

// checkRefittable refuses, before a writer (and a log) is opened, an
// index whose vectors are not LSA's.
func checkRefittable(dir string) error {
	if dir == "" {
		return fmt.Errorf("--index <dir> is required")
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	if _, ok := ix.LSAOptions(); !ok {
		return fmt.Errorf("index %s: its vectors come from %q, not LSA: a refit applies to LSA (rebuild the index to change its embedder)", dir, ix.Meta.Embedder)
	}
	return nil
}

func newIndexDetach(g *globals) *cobra.Command {
	var f liveFlags
	cmd := &cobra.Command{
		Use:   "detach --index <dir>",
		Short: "Make a fleet replica's index forget the fleet's log",
		Long: `A replica's index records the fleet's log it follows and the last batch it took (docs/fleet.md);
it then refuses local writes and refits, and another fleet's log. Detach makes it forget both:
the index takes local writes and refits again, and may begin a new fleet (under another index
name, or after the old stream was deleted). Stop the server that serves it first.`,
		Example: `  gleaner index detach --index fleet/a && gleaner index refit --index fleet/a`,
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := f.open(cmd, g)
			if err != nil {
				return err
			}
			origin, source := w.Origin(), w.Source()
			if origin == "" {
				origin = "a log the index had not recorded yet"
			}
			if w.Origin() == "" && source == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "the index follows no fleet's log: nothing to do")
				return finishLive(cmd, w, nil, nil)
			}
			err = w.Detach(cmd.Context())
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "detached from %s (it had taken batches up to %d); saved\n", origin, source)
			}
			return finishLive(cmd, w, nil, err)
		},
	}
	f.bindIndex(cmd)
	return cmd
}
