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
	"github.com/gleaner-rag/gleaner/models/ort"
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
	if err := index.Build(context.Background(), c, idir, index.WithTextEmbedder(bi), index.WithoutHead()); err != nil {
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

func TestXLMRCrossEncoderNativeMatchesORT(t *testing.T) {
	c := synth.Generate(synth.Options{People: 40, Cities: 10, Countries: 3, Bands: 10, Queries: 5, Seed: 8})
	dir := filepath.Join(t.TempDir(), "xlmr")
	if _, err := testmodel.Write(dir, testmodel.NodeTexts(c), testmodel.Options{Kind: "xlm-roberta", Cross: true}); err != nil {
		t.Fatal(err)
	}
	texts := func(n int32) string { return c.Nodes[n].Text }
	nat, head, err := transformer.Load(dir, transformer.Native, cpu.New(), texts, 0)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := nat.Prepare(context.Background(), c.Queries[0].Text)
	nodes := []int32{0, 3, 5, 9}
	a := make([]float32, len(nodes)*nat.Dim())
	if err := nat.Encode(context.Background(), q, nodes, a); err != nil {
		t.Fatal(err)
	}
	if head == nil {
		t.Fatal("no head")
	}
	if err := ort.Init(); err != nil {
		t.Skipf("ONNX Runtime absent: %v", err)
	}
	ox, _, err := transformer.Load(dir, transformer.ORT, cpu.New(), texts, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ox.Close()
	q2, _ := ox.Prepare(context.Background(), c.Queries[0].Text)
	b := make([]float32, len(a))
	if err := ox.Encode(context.Background(), q2, nodes, b); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-4*(1+math.Abs(float64(b[i]))) {
			t.Fatalf("latent %d: native %v, ort %v", i, a[i], b[i])
		}
	}
}
