// Command live measures live updates (index/live) on a 2Wiki-sized index.
//
//	go run ./benchmarks/live equality -corpus data/2wiki -work /tmp/live -ops 10000
//	go run ./benchmarks/live ingest -corpus data/2wiki -work /tmp/live -duration 20s
//
// equality builds an index of the corpus with a mentions graph, applies a
// seeded random sequence of adds, replaces and deletes through a live
// writer, builds a fresh index of the final corpus (the live index's
// passages in its order), and compares the two on the corpus's questions:
// BM25 rankings and scores, mentions edges, seeded PPR, and the methods
// that also read vectors (LSA fold-in against a refit basis) and the head
// (carried against retrained), by overlap@10 and recall@10.
//
// ingest serves the index in-process on 127.0.0.1 with writes enabled,
// measures the query p50/p99 at a steady -rate of BM25 queries with no
// writes, then again while -writers clients commit batches of 100-word
// passages as fast as they are acknowledged, and prints the passages per
// second acknowledged (durable: fsynced). It stops by itself.
//
// commits opens the live index that an ingest run left in -work (or
// -index) and times -ops append commits, then -ops replace commits, of
// -batch passages each.
//
// soak runs a live writer for -duration under a level stream of changes
// (adds, replaces and deletes balanced) with BM25 queries beside, and
// prints RSS, Go heap, log and folder sizes every -every: memory and disk
// must follow the index's size, not the number of changes.
//
// fleet runs a 3-node NATS JetStream cluster in-process on loopback and
// two replicas of the index following its update log (index/fleet):
// -writers publishers send batches of -batch new passages for -duration;
// it prints the passages per second the log acknowledged, each batch's
// lag until the serving replica applied it, that replica's BM25 p50/p99
// at -rate q/s idle and during the ingest, checks that the replicas end
// identical, and times a fresh replica's catch-up from a snapshot of the
// starting index and from one of the end. -kill-leader stops the log's
// leader node for the middle third of the ingest.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/live"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("live: want a mode (equality, ingest, soak, commits or fleet), then flags")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	src := fs.String("corpus", "", "a gleaner JSONL corpus folder (nodes.jsonl, queries.jsonl)")
	work := fs.String("work", "", "a scratch folder (replaced)")
	seed := fs.Uint64("seed", 1, "random seed")
	ops := fs.Int("ops", 10000, "equality: changes applied; commits: commits of each kind")
	duration := fs.Duration("duration", 20*time.Second, "ingest: length of each phase; soak: length of the run")
	rate := fs.Int("rate", 100, "ingest: queries per second")
	rounds := fs.Int("rounds", 1, "ingest: ingest phases, each followed by an idle one; above 1, the p99s are also pooled over the rounds, every ingest phase between two idle ones (1 to 100)")
	writers := fs.Int("writers", 4, "ingest: concurrent writing clients")
	batch := fs.Int("batch", 50, "ingest: passages per write request")
	ingestRate := fs.Int("ingest-rate", 0, "ingest, fleet: passages per second, all writers together (0: as fast as acknowledged)")
	mentions := fs.Bool("mentions", true, "build (and keep) a mentions graph")
	profile := fs.String("cpuprofile", "", "ingest: write a CPU profile of the ingesting phase to this file; commits: of each kind's commits, to this file .append and .replace")
	share := fs.Float64("apply-share", 1, "ingest: the server's --apply-share (most of the time commits may take)")
	interval := fs.Duration("commit-interval", 0, "ingest: the server's --commit-interval (least time between two commits)")
	writeIdle := fs.Bool("write-idle", server.DefaultConfig().WriteIdle, "ingest: the server's --write-idle (GOMAXPROCS as gleaner serve sets it, unless the variable is set)")
	writeCores := fs.Int("write-cores", server.DefaultConfig().WriteCores, "ingest: the server's --write-cores (0: no bound)")
	traceFile := fs.String("trace", "", "ingest: write an execution trace of 10 s of the ingesting phase to this file (go tool trace)")
	traceAt := fs.Duration("trace-at", 0, "ingest: when the -trace starts, into the ingesting phase")
	memProfile := fs.String("memprofile", "", "soak, ingest, commits: write a heap profile (with what was allocated) at the end of the run, the ingesting phase or the commits to this file")
	every := fs.Duration("every", 10*time.Second, "soak: report interval")
	refit := fs.Bool("refit", false, "equality: refit the live index's LSA basis (gleaner index refit) before comparing")
	existing := fs.String("index", "", "commits, soak, ingest: the live index to commit to (commits: default the one -work holds; soak, ingest: default a fresh build in -work)")
	fs.Float64Var(&mergeShare, "merge-share", -1, "equality, commits, soak: the writer's live.Options.MergeShare (0: no background merge; default: half of -deleted-share)")
	fs.Float64Var(&deletedShare, "deleted-share", live.DefaultOptions(nil).DeletedShare, "equality, commits, soak: the writer's live.Options.DeletedShare (0: renumber at every removal)")
	killLeader := fs.Bool("kill-leader", false, "fleet: stop the log's leader NATS node for the middle third of the ingest")
	sections := fs.String("sections", "trigraph,hnsw", "equality: build steps run on both indexes (comma-separated; the live one refreshes them after the changes)")
	fs.Parse(os.Args[2:])
	onIndex := (os.Args[1] == "commits" || os.Args[1] == "soak" || os.Args[1] == "merge" || os.Args[1] == "ingest") && *existing != ""
	if *src == "" || (*work == "" && !onIndex) {
		log.Fatal("live: -corpus and -work (or, for commits, soak, merge and ingest, -index) are required")
	}
	c, err := corpus.Load(*src, corpus.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if os.Args[1] == "commits" { // on an index an earlier run left: nothing is built or removed
		dir := *existing
		if dir == "" {
			dir = filepath.Join(*work, "live")
		}
		if err := commits(c, dir, *ops, *batch, *seed, *profile, *memProfile); err != nil {
			log.Fatal(err)
		}
		return
	}
	if os.Args[1] == "merge" { // likewise
		share := mergeShare
		if share == -1 {
			share = deletedShare / 2
		}
		if err := merges(c, *existing, *writers, *batch, *seed, share, *profile); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *rounds < 1 || *rounds > 100 {
		log.Fatalf("-rounds %d: want 1 to 100", *rounds)
	}
	run := ingestRun{d: *duration, rounds: *rounds, rate: *rate, writers: *writers, batch: *batch, ingestRate: *ingestRate, seed: *seed,
		profile: *profile, memProfile: *memProfile, trace: *traceFile, traceAt: *traceAt, interval: *interval, share: *share, writeCores: *writeCores, writeIdle: *writeIdle}
	if os.Args[1] == "ingest" && *existing != "" { // an index grown already: the idle phases measure it at about the ingest's size
		if err := ingest(c, *existing, run); err != nil {
			log.Fatal(err)
		}
		return
	}
	if os.Args[1] == "soak" && *existing != "" { // likewise
		if err := soak(c, *existing, *duration, *every, *rate, *writers, *batch, *seed, *memProfile); err != nil {
			log.Fatal(err)
		}
		return
	}
	os.RemoveAll(*work)
	base := filepath.Join(*work, "live")
	start := time.Now()
	steps := strings.FieldsFunc(*sections, func(r rune) bool { return r == ',' })
	if os.Args[1] != "equality" {
		steps = nil
	}
	if err := buildIndex(c, base, *mentions, steps); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("built %s: %d passages, mentions %v, in %v\n", base, len(c.Nodes), *mentions, time.Since(start).Round(time.Millisecond))
	switch os.Args[1] {
	case "equality":
		err = equality(c, *work, base, *ops, *seed, *mentions, steps, *refit)
	case "soak":
		err = soak(c, base, *duration, *every, *rate, *writers, *batch, *seed, *memProfile)
	case "fleet":
		err = fleetBench(c, *work, base, fleetRun{d: *duration, rate: *rate, writers: *writers, batch: *batch, seed: *seed, killLeader: *killLeader, ingestRate: *ingestRate})
	case "ingest":
		err = ingest(c, base, run)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// buildIndex builds c at dir with gleaner's defaults, and its mentions
// graph when asked.
func buildIndex(c *corpus.Corpus, dir string, mentions bool, steps []string) error {
	ctx := context.Background()
	if err := index.Build(ctx, c, dir, index.WithLogger(quiet)); err != nil {
		return err
	}
	if mentions {
		steps = append([]string{"mentions"}, steps...)
	}
	be, err := engine.Open("cpu")
	if err != nil {
		return err
	}
	for _, step := range steps {
		cfg, err := retrieve.NewBuildConfig(step)
		if err != nil {
			return err
		}
		start := time.Now()
		if _, err = retrieve.Build(ctx, retrieve.BuildEnv{Backend: be, Logger: quiet, Getenv: os.Getenv, Out: os.Stderr}, dir, cfg); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		fmt.Printf("built %s in %v\n", step, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// openWriter opens the index at dir for live updates, with the cpu
// backend for refreshes.
// deletedShare and mergeShare are -deleted-share and -merge-share.
var deletedShare, mergeShare float64

func openWriter(ctx context.Context, dir string) (*live.Writer, error) {
	be, err := engine.Open("cpu")
	if err != nil {
		return nil, err
	}
	o := live.DefaultOptions(quiet)
	o.Refresh.Backend, o.DeletedShare, o.MergeShare = be, deletedShare, mergeShare
	if mergeShare == -1 {
		o.MergeShare = deletedShare / 2
	}
	return live.Open(ctx, dir, o)
}
