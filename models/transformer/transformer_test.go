package transformer_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/testmodel"
	"github.com/gleaner-rag/gleaner/models/transformer"
)

func TestBiEncoderAsIndexEmbedder(t *testing.T) {
	c := synth.Generate(synth.Options{People: 40, Cities: 10, Countries: 3, Bands: 10, Queries: 5, Seed: 8})
	mdir := filepath.Join(t.TempDir(), "bi")
	if _, err := testmodel.Write(mdir, testmodel.NodeTexts(c), testmodel.Options{Cross: false}); err != nil {
		t.Fatal(err)
	}
	bi, err := transformer.LoadBiEncoder(mdir, transformer.PoolMean, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{c.Nodes[0].Text, c.Nodes[1].Text, "short"}
	batch, err := bi.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	d := bi.Dim()
	for i, txt := range texts {
		alone, _ := bi.Embed(context.Background(), []string{txt})
		var norm float64
		for j := 0; j < d; j++ {
			norm += float64(batch[i*d+j]) * float64(batch[i*d+j])
			if math.Abs(float64(alone[j]-batch[i*d+j])) > 1e-5 {
				t.Fatalf("text %d: embedding depends on its batch (%v vs %v)", i, alone[j], batch[i*d+j])
			}
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Errorf("text %d: norm² %v", i, norm)
		}
	}
	idir := filepath.Join(t.TempDir(), "ix")
	if err := index.Build(context.Background(), c, idir, index.WithTextEmbedder(bi)); err != nil {
		t.Fatal(err)
	}
	ix, err := index.OpenWith(idir, store.OpenOptions{}, bi)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	node := corpus.Node{Title: c.Nodes[7].Title, Text: c.Nodes[7].Text}
	q, err := ix.EmbedQuery(context.Background(), index.IndexText(&node))
	if err != nil {
		t.Fatal(err)
	}
	hits, _ := kernels.FlatIP(context.Background(), ix.Vectors, ix.N(), d, q, 1, 1, 0)
	if hits[0][0].Index != 7 {
		t.Errorf("a node's own text retrieves node %d first, want 7", hits[0][0].Index)
	}
}
