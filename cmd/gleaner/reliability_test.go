package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/tokenize"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// buildFullIndex makes an index with every kind of file: graph, stored
// token ids and a trained head.
func buildFullIndex(t *testing.T, dir string, seed uint64) (cdir, idir string) {
	t.Helper()
	cdir, idir = filepath.Join(dir, "corpus"), filepath.Join(dir, "ix")
	c := synth.Generate(synth.Options{People: 60, Cities: 10, Countries: 4, Bands: 10, Queries: 10, Seed: seed})
	if err := corpus.Write(cdir, c); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "tokenizer.json")
	if err := tokenize.WriteBERT(tok, []string{"the", "of", "band", "city"}); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "index", cdir, "-o", idir, "--dims", "16", "--tokenizer", tok); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	if out, err := run(t, "graph", "build", "--kind", "knn", "--index", idir); err != nil {
		t.Fatalf("graph: %v\n%s", err, out)
	}
	q := filepath.Join(cdir, "queries.jsonl")
	buildEverySection(t, idir, map[string]string{"ner": "titles", "train": q, "dev": q, "epochs": "1",
		"hidden": "8", "heads": "2", "layers": "1", "pca": "8", "samples": "2", "subset": "5"})
	return cdir, idir
}

// buildEverySection runs every registered build step that writes an index
// section (graph build --kind or train), so the tests that damage or check
// every file cover every method's section, a new method's included. fast
// are settings that keep the steps small, given to the steps that have them.
func buildEverySection(t *testing.T, idir string, fast map[string]string) {
	t.Helper()
	for _, b := range retrieve.Builds() {
		if b.Section == "" {
			continue
		}
		args := []string{"graph", "build", "--kind", b.Name}
		if b.Group == retrieve.BuildTrain {
			args = []string{"train", b.Name}
		}
		args = append(args, "--index", idir)
		for _, p := range b.Params {
			if v, ok := fast[p.Name()]; ok {
				args = append(args, "--"+p.Name(), v)
			}
		}
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestCorruptionCampaign flips bytes at many offsets and truncates every
// file of an index, the manifest included: each damage must be an error
// that names the damaged file, never a panic or a silently changed index.
func TestCorruptionCampaign(t *testing.T) {
	_, idir := buildFullIndex(t, t.TempDir(), 7)
	b, _ := os.ReadFile(filepath.Join(idir, store.ManifestFile))
	var m store.Manifest
	json.Unmarshal(b, &m)
	files := m.Names()
	total, detected := 0, 0
	perFile := map[string]int{}
	for _, name := range files {
		p := filepath.Join(idir, name)
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var damages []func() []byte
		for _, off := range offsets(len(orig)) {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				damages = append(damages, func() []byte { d := append([]byte(nil), orig...); d[off] ^= x; return d })
			}
		}
		for _, n := range []int{0, len(orig) / 2, len(orig) - 1} {
			if n >= 0 && n < len(orig) {
				damages = append(damages, func() []byte { return orig[:n] })
			}
		}
		damages = append(damages, func() []byte { return append(append([]byte(nil), orig...), '\n') })
		for _, damage := range damages {
			total++
			os.WriteFile(p, damage(), 0o644)
			err := openAndRecover(idir)
			os.WriteFile(p, orig, 0o644)
			switch {
			case err == nil:
				t.Errorf("%s: a damaged index opened", name)
			case !strings.Contains(err.Error(), name):
				t.Errorf("%s: error does not name the file: %v", name, err)
			default:
				detected++
				perFile[name]++
			}
		}
	}
	if err := openAndRecover(idir); err != nil {
		t.Fatalf("the restored index does not open: %v", err)
	}
	t.Logf("corruption campaign: %d of %d damages detected over %d files (%d in %s)", detected, total, len(files), perFile[store.ManifestFile], store.ManifestFile)
}

// offsets spreads up to 24 byte positions over a file, both ends included.
func offsets(n int) []int {
	if n == 0 {
		return nil
	}
	seen, out := map[int]bool{}, []int{}
	for i := 0; i < 24; i++ {
		off := i * (n - 1) / 23
		if !seen[off] {
			seen[off] = true
			out = append(out, off)
		}
	}
	return out
}

// openAndRecover opens an index, turning a panic into an error so that the
// campaign reports it instead of dying.
func openAndRecover(dir string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	ix, err := index.Open(dir, store.OpenOptions{})
	if err == nil {
		ix.Close()
	}
	return err
}

// TestHostileUser replays, through the CLI, what a careless or hostile user
// did to an earlier gleaner, with the error each now gets.
func TestHostileUser(t *testing.T) {
	dir := t.TempDir()
	cdir, idir := buildFullIndex(t, dir, 3)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	expectErr := func(what, want string, args ...string) {
		t.Helper()
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to contain %q\n%s", what, err, want, out)
		}
	}

	// Data loss.
	web := filepath.Join(dir, "website")
	write("website/manifest.json", `{"name": "my app"}`)
	write("website/index.html", "<html>")
	expectErr("index -o onto a folder with a foreign manifest.json", "is not a gleaner index", "index", filepath.Join(dir, "no-such-corpus"), "-o", web)
	if _, err := os.Stat(filepath.Join(web, "index.html")); err != nil {
		t.Error("the website was touched")
	}
	write("ix/notes.txt", "my notes")
	if out, err := run(t, "index", cdir, "-o", idir, "--dims", "16"); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(idir, "notes.txt")); string(b) != "my notes" {
		t.Error("notes.txt inside the index folder was lost on rebuild")
	}
	src := filepath.Join(dir, "src")
	write("src/nodes.jsonl", `{"id":"a","text":"alpha"}`+"\n"+`{"id":"b","text":"beta"}`+"\n")
	write("src/edges.jsonl", `{"src":"a","dst":"b"}`+"\n")
	out := filepath.Join(dir, "imported")
	run(t, "import", "jsonl", src, "-o", out)
	os.Remove(filepath.Join(src, "edges.jsonl"))
	run(t, "import", "jsonl", src, "-o", out)
	if _, err := os.Stat(filepath.Join(out, "edges.jsonl")); err == nil {
		t.Error("import kept a stale edges.jsonl")
	}
	expectErr("import -o onto a user's folder", "is not a gleaner corpus folder", "import", "jsonl", src, "-o", web)

	// Silent corruption.
	mp := filepath.Join(idir, store.ManifestFile)
	orig, _ := os.ReadFile(mp)
	os.WriteFile(mp, []byte(strings.Replace(string(orig), `"k1": 0.9`, `"k1": 1.9`, 1)), 0o644)
	expectErr("a changed k1 in the manifest", "manifest.json: checksum", "index", "info", idir)
	os.WriteFile(mp, orig, 0o644)
	bad := map[string]struct{ nodes, edges, want string }{
		"weight 1e39":       {"", `{"src":"a","dst":"b","weight":1e39}`, `edges.jsonl:1: field "weight"`},
		"weight 0":          {"", `{"src":"a","dst":"b","weight":0}`, `weights must be > 0`},
		"weight 1e-50":      {"", `{"src":"a","dst":"b","weight":1e-50}`, `stored as 0`},
		"vertical tab id":   {`{"id":"a\u000bx","text":"t"}`, "", `nodes.jsonl:3: field "id"`},
		"NBSP id":           {`{"id":"a` + "\u00a0" + `x","text":"t"}`, "", `white space`},
		"EM SPACE id":       {`{"id":"a` + "\u2003" + `x","text":"t"}`, "", `white space`},
		"invalid UTF-8":     {"{\"id\":\"c\",\"text\":\"caf\xe9\"}", "", `nodes.jsonl:3: field "text": malformed record: invalid UTF-8`},
		"escaped NUL":       {`{"id":"c\u0000","text":"t"}`, "", `nodes.jsonl:3: field "id": malformed record: NUL`},
		"50 MB record":      {`{"id":"c","text":"` + strings.Repeat("x", 50<<20) + `"}`, "", `record longer than`},
		"dangling endpoint": {"", `{"src":"a","dst":"zz"}`, `edges.jsonl:1: field "dst"`},
	}
	for name, c := range bad {
		cd := filepath.Join(dir, "bad", strings.ReplaceAll(name, " ", "_"))
		os.MkdirAll(cd, 0o755)
		os.WriteFile(filepath.Join(cd, "nodes.jsonl"), []byte(`{"id":"a","text":"alpha"}`+"\n"+`{"id":"b","text":"beta"}`+"\n"+c.nodes+"\n"), 0o644)
		if c.edges != "" {
			os.WriteFile(filepath.Join(cd, "edges.jsonl"), []byte(c.edges+"\n"), 0o644)
		}
		expectErr(name, c.want, "index", cd, "-o", filepath.Join(cd, "ix"), "--train-head=false")
	}
	bom := filepath.Join(dir, "bom")
	write("bom/nodes.jsonl", "\xef\xbb\xbf"+`{"id":"a","text":"alpha beta"}`+"\n"+`{"id":"b","text":"beta gamma"}`+"\n"+
		`{"id":"c","text":"gamma delta"}`+"\n"+`{"id":"d","text":"delta alpha"}`+"\n"+`{"id":"e","text":"epsilon zeta"}`+"\n")
	if out, err := run(t, "index", bom, "-o", filepath.Join(bom, "ix"), "--train-head=false", "--dims", "1"); err != nil {
		t.Errorf("a byte-order mark: %v\n%s", err, out)
	}

	// The index works from any directory: its source path is absolute.
	wd, _ := os.Getwd()
	os.Chdir(t.TempDir())
	_, err := run(t, "eval", "--index", idir, "--method", "bm25")
	os.Chdir(wd)
	if err != nil {
		t.Errorf("eval from another directory: %v", err)
	}

	// Crashes and resource exhaustion.
	for _, k := range []string{"9223372036854775807", "4294967296"} {
		for _, m := range []string{"bm25", "vector", "re2", "ppr", "ppr-bm25", "re2-vector", "hybrid", "fastinsight", "gar"} {
			if out, err := run(t, "query", "--index", idir, "--method", m, "-k", k, "band"); err != nil {
				t.Errorf("query -k %s --method %s: %v\n%s", k, m, err, out)
			}
		}
		if out, err := run(t, "eval", "--index", idir, "--method", "bm25,re2", "--k", k); err != nil {
			t.Errorf("eval --k %s: %v\n%s", k, err, out)
		}
		if out, err := run(t, "eval", "--index", idir, "--method", "bm25", "--cutoffs", k); err != nil {
			t.Errorf("eval --cutoffs %s: %v\n%s", k, err, out)
		}
	}
	if out, err := run(t, "eval", "--index", idir, "--method", "bm25", "--concurrency", "100000000"); err != nil {
		t.Errorf("eval --concurrency 1e8: %v\n%s", err, out)
	}
	expectErr("--concurrency 0", "--concurrency must be ≥ 1", "eval", "--index", idir, "--concurrency", "0")
	expectErr("--k 0", "--k must be ≥ 1", "eval", "--index", idir, "--k", "0")
	expectErr("empty method", "an empty method name", "eval", "--index", idir, "--method", "bm25,")
	expectErr("duplicated method", "bm25 is listed twice", "eval", "--index", idir, "--method", "bm25,vector,bm25")
	expectErr("query -k 0", "-k must be positive", "query", "--index", idir, "-k", "0", "x")
	expectErr("knn with no neighbours", "k-lex and k-sem cannot both be 0", "graph", "build", "--kind", "knn", "--index", idir, "--k-lex", "0", "--k-sem", "0")
	expectErr("negative lexical budget", "--lex-budget -1: want ≥ 0", "graph", "build", "--kind", "knn", "--index", idir, "--lex-budget", "-1")
	expectErr("negative title length", "--min-title-len -5: want ≥ 1", "graph", "build", "--kind", "mentions", "--index", idir, "--min-title-len", "-5")
	expectErr("negative title hits", "--max-title-hits -1: want ≥ 0", "graph", "build", "--kind", "mentions", "--index", idir, "--max-title-hits", "-1")
	expectErr("negative epochs", "1 ≤ epochs", "train", "head", "--index", idir, "--epochs", "-3")
	expectErr("zero epochs", "1 ≤ epochs", "train", "head", "--index", idir, "--epochs", "0")
	expectErr("10⁸ pseudo-queries", "1 ≤ pseudo-queries ≤ 1000000", "train", "head", "--index", idir, "--pseudo", "100000000")
	expectErr("zero pseudo-queries", "1 ≤ pseudo-queries", "train", "head", "--index", idir, "--pseudo", "0")
	expectErr("zero LSA dims", "dims must be in", "index", cdir, "-o", filepath.Join(dir, "ix0"), "--dims", "0")
	expectErr("NaN k1", "k1=NaN", "index", cdir, "-o", filepath.Join(dir, "ix0"), "--k1", "NaN")
	expectErr("a million hidden units", "want 1 to 4096", "train", "head", "--index", idir, "--hidden", "1000000")
	expectErr("a first stage for bm25, which has none", "--first-stage applies to --method", "eval", "--index", idir, "--method", "bm25", "--first-stage", "garbage")
	expectErr("a bad first stage", `--first-stage garbage: want one of "bm25", "vector", "hybrid"`, "eval", "--index", idir, "--method", "bm25,ppr", "--first-stage", "garbage")
	expectErr("an empty queries file", "holds no queries", "eval", "--index", idir, "--queries", write("empty.jsonl", ""))
	mine := write("mine.txt", "hello")
	expectErr("--report over a file of mine", "not a gleaner report", "eval", "--index", idir, "--method", "bm25", "--report", mine)
	if b, _ := os.ReadFile(mine); string(b) != "hello" {
		t.Error("--report replaced a user's file")
	}
	expectErr("--report onto a folder", "is a folder", "eval", "--index", idir, "--method", "bm25", "--report", dir)
	if out, err := run(t, "eval", "--index", idir, "--method", "ppr", "--damping", "0.99"); err != nil {
		t.Errorf("ppr at damping 0.99: %v\n%s", err, out)
	}
	out, err = run(t, "eval", "--index", idir, "--method", "bm25", "--columns", "recall@10,answer_recall@10")
	if err != nil || !strings.Contains(out, " -") {
		t.Errorf("a metric that cannot be computed (no answers) must show -, not 0: %v\n%s", err, out)
	}
}

// TestMain lets the crash test run the CLI as a child process of the test
// binary (GLEANER_CLI_ARGS holds its arguments), so it can be killed.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("GLEANER_CLI_ARGS"); ok {
		os.Args = append([]string{"gleaner"}, strings.Split(args, "\x1f")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKillDuringIndex kills `gleaner index` with SIGKILL at 24 points of a
// rebuild over an existing index, spread over every stage (analysis, LSA,
// writing, head training): after each, the old index must still open with
// its checksums, answer with its head, and keep the user's file, and no
// partial index may be visible at the target.
func TestKillDuringIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test runs the CLI 25 times")
	}
	dir := t.TempDir()
	cdir, idir := filepath.Join(dir, "corpus"), filepath.Join(dir, "ix")
	c := synth.Generate(synth.Options{People: 1500, Cities: 60, Countries: 10, Bands: 300, Queries: 10, Seed: 1})
	if err := corpus.Write(cdir, c); err != nil {
		t.Fatal(err)
	}
	args := []string{"index", cdir, "-o", idir, "--dims", "32"}
	if out, err := run(t, args...); err != nil {
		t.Fatalf("first build: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(idir, "notes.txt"), []byte("mine"), 0o644)
	oldManifest, _ := os.ReadFile(filepath.Join(idir, store.ManifestFile))
	full := timeChild(t, args) // one uninterrupted rebuild, to spread the kills over
	oldManifest, _ = os.ReadFile(filepath.Join(idir, store.ManifestFile))
	var at []time.Duration
	for i := 0; i < 12; i++ { // the short early stages, densely
		at = append(at, time.Duration(i+1)*30*time.Millisecond)
	}
	for i := 0; i < 12; i++ { // then the whole run, head training included
		at = append(at, 360*time.Millisecond+time.Duration(i)*(full-360*time.Millisecond)/12)
	}
	stages, intact := map[string]int{}, 0
	for _, d := range at {
		stage, finished := killChild(t, args, d)
		if finished {
			stages["finished before the kill"]++
			oldManifest, _ = os.ReadFile(filepath.Join(idir, store.ManifestFile))
		} else {
			stages[stage]++
		}
		now, _ := os.ReadFile(filepath.Join(idir, store.ManifestFile))
		ok := string(now) == string(oldManifest)
		if !ok && stage == "promoting" && len(now) > 0 {
			// killed after the swap but before exiting: the new, complete
			// index is in place (checked below like the old one)
			ok, oldManifest = true, now
			stages["promoted before the kill"]++
		}
		if out, err := run(t, "query", "--index", idir, "--method", "re2", "-k", "3", c.Nodes[0].Title); err != nil {
			ok = false
			t.Errorf("kill at %v (%s): the index no longer answers: %v\n%s", d, stage, err, out)
		}
		if b, _ := os.ReadFile(filepath.Join(idir, "notes.txt")); string(b) != "mine" {
			ok = false
			t.Errorf("kill at %v (%s): the user's file is gone", d, stage)
		}
		if ok {
			intact++
		} else {
			t.Errorf("kill at %v (%s): the target changed without a finished build", d, stage)
		}
	}
	left := len(store.Debris(idir))
	t.Logf("kill -9 during `gleaner index`: old index intact %d / %d; kills by stage %v (a full rebuild took %v); hidden debris folders left: %d",
		intact, len(at), stages, full, left)
	// The next run names and removes what the kills left.
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("the run after the kills: %v\n%s", err, out)
	}
	if d := store.Debris(idir); len(d) != 0 {
		t.Errorf("debris after the next run: %v", d)
	}
	if left > 0 && !strings.Contains(out, "removed hidden folders") {
		t.Errorf("the next run did not say it removed %d folders:\n%s", left, out)
	}
}

func child(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GLEANER_CLI_ARGS="+strings.Join(append([]string{"--log-level", "info"}, args...), "\x1f"))
	return cmd
}

func timeChild(t *testing.T, args []string) time.Duration {
	start := time.Now()
	if out, err := child(args).CombinedOutput(); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, out)
	}
	return time.Since(start)
}

// killChild starts a rebuild, SIGKILLs it after d and returns the stage its
// log had reached (or finished = true when it completed first).
func killChild(t *testing.T, args []string, d time.Duration) (stage string, finished bool) {
	var log bytes.Buffer
	cmd := child(args)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return "", err == nil
	case <-time.After(d):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
	return lastStage(log.String()), false
}

func lastStage(log string) string {
	stage := "loading the corpus"
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(line, `msg="stage started"`):
			stage = strings.TrimSuffix(strings.SplitN(strings.SplitN(line, "stage=", 2)[1], " total=", 2)[0], `"`)
			stage = strings.TrimPrefix(stage, `"`)
		case strings.Contains(line, `msg="stage finished" stage=write`):
			stage = "head training"
		case strings.Contains(line, `msg="head trained"`):
			stage = "promoting"
		}
	}
	return stage
}
