package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models/tokenize"
)

// storeTokens tokenizes every node of the index at dir once (title + text,
// on all cores, one tokenizer per worker) and stores the ids in the index.
func storeTokens(ctx context.Context, dir, tokenizerPath string, g *globals) error {
	hash, err := index.TokenizerHash(tokenizerPath)
	if err != nil {
		return err
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	n := ix.N()
	texts := make([]string, n)
	for i := range texts {
		node := corpus.Node{Title: ix.Title(i), Text: ix.Text(i)}
		texts[i] = index.IndexText(&node)
	}
	ix.Close()
	ids, err := tokenizeAll(ctx, tokenizerPath, texts, progress.New(os.Stderr, g.log, 2*time.Second))
	if err != nil {
		return err
	}
	return index.SetTokens(ctx, dir, hash, ids)
}

func tokenizeAll(ctx context.Context, path string, texts []string, p progress.Reporter) ([][]int32, error) {
	out := make([][]int32, len(texts))
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	p.Stage("tokenize", len(texts))
	defer p.Finish()
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := tokenize.Load(path)
			if err != nil {
				errs[w] = err
				return
			}
			for i := w; i < len(texts); i += workers {
				if i%512 == 0 && ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				if out[i], err = tk.IDs(texts[i]); err != nil {
					errs[w] = fmt.Errorf("node %d: %w", i, err)
					return
				}
				mu.Lock()
				done++
				p.Set(done)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
