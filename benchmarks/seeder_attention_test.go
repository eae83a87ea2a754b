package benchmarks

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/methods/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// TestSeederAttention prints where a trained SeedER encoder attends on the
// gold answers of a question file, layer by layer (issue: seeder-learns,
// item 1). Set SEEDER_DIAG_INDEX to a trained index and SEEDER_DIAG_QUERIES
// to its dev questions; benchmarks/seeder/run.sh does.
func TestSeederAttention(t *testing.T) {
	dir, qpath := os.Getenv("SEEDER_DIAG_INDEX"), os.Getenv("SEEDER_DIAG_QUERIES")
	if dir == "" || qpath == "" {
		t.Skip("set SEEDER_DIAG_INDEX and SEEDER_DIAG_QUERIES")
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	qs, err := corpus.ReadQueries(qpath, nil, corpus.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shares, err := seeder.AttentionShares(context.Background(), ix, retrieve.Env{Backend: cpu.New()}, qs)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("attention of the gold answers, %s on %s (share of the weight, mean over answers and heads)\n", dir, qpath)
	fmt.Println("layer  KG edges  (uniform)  expander  virtual node  KG edges of the text side's top relations")
	for l, s := range shares {
		fmt.Printf("%5d  %8.3f  %9.3f  %8.3f  %12.3f  %8.3f\n", l+1, s.KG, s.UniformKG, s.Expander, s.Virtual, s.TopRelation)
	}
}
