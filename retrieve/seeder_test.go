package retrieve_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// tinySeederOptions train a small encoder quickly on kgIndex.
func tinySeederOptions() retrieve.SeederTrainOptions {
	so := retrieve.DefaultSeederTrainOptions()
	so.Model = seeder.Config{In: 3, Hidden: 8, Heads: 2, Layers: 2, MaxHop: 2, Cycles: 1, Virtual: true, HopGate: true, Seed: 2}
	so.Train.Epochs, so.Train.Batch, so.Train.Loss.K = 4, 2, 3
	return so
}

// TestSeederTrainStoreQuery trains on kgIndex, stores the encoder, and
// queries it after reopening: reproducible weights, the stored model equal
// to the trained one, distinct hits from the candidate graph.
func TestSeederTrainStoreQuery(t *testing.T) {
	ix := kgIndex(t)
	o := retrieve.DefaultOptions()
	o.GraphKinds = []string{"kg"}
	o.KG.K0 = 1
	if _, err := retrieve.NewWith("seeder", ix, o); !errors.Is(err, retrieve.ErrNoSeeder) {
		t.Fatalf("seeder without an encoder: %v, want ErrNoSeeder", err)
	}
	qs := []corpus.Query{{ID: "a", Text: "Which country does Ann Lee live in?", Gold: []string{"france"}},
		{ID: "b", Text: "Which country does Bob Ray live in?", Gold: []string{"italy"}}}
	ctx := context.Background()
	sf, err := retrieve.TrainSeeder(ctx, ix, o, tinySeederOptions(), qs, qs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := retrieve.TrainSeeder(ctx, ix, o, tinySeederOptions(), qs, qs)
	if err != nil {
		t.Fatal(err)
	}
	want := sf.Model.Tensors()
	for name, tv := range again.Model.Tensors() {
		if !slices.Equal(tv.Data, want[name].Data) {
			t.Fatalf("a second training run gave a different %s", name)
		}
	}
	if len(sf.Epochs) != 4 {
		t.Fatalf("%d epoch reports, want 4", len(sf.Epochs))
	}
	// a sampled training set's vocabulary holds only the sample's words
	one := tinySeederOptions()
	one.MaxTrain, one.MinWordCount, one.Train.Epochs = 1, 1, 1
	sampled, err := retrieve.TrainSeeder(ctx, ix, o, one, qs, qs)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(sampled.Vocab, "ann") == slices.Contains(sampled.Vocab, "bob") {
		t.Fatalf("vocabulary of a one-question sample: %v", sampled.Vocab)
	}
	if err := index.SetSeeder(ctx, ix.Dir, sf); err != nil {
		t.Fatal(err)
	}
	re, err := index.Open(ix.Dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	for name, tv := range re.Seeder.Model.Tensors() {
		if !slices.Equal(tv.Data, want[name].Data) {
			t.Fatalf("stored %s differs from the trained one", name)
		}
	}
	m, err := retrieve.NewWith("seeder", re, o)
	if err != nil {
		t.Fatal(err)
	}
	defer retrieve.CloseAll(ctx, m)
	hits, err := m.Retrieve(ctx, retrieve.Query{Text: qs[0].Text}, 10)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{}
	for _, h := range hits {
		if seen[h.Index] || re.NodeID(int(h.Index)) == "italy" { // italy lies beyond the kg edges from ann
			t.Fatalf("hits %v: a repeat, or a node outside the candidate graph", hits)
		}
		seen[h.Index] = true
	}
	if len(hits) == 0 || len(hits) > 10 {
		t.Fatalf("%d hits for k = 10", len(hits))
	}
	// the encoder's engine ops on other backends (the CUDA kernels under
	// host emulation, in the default cgo build) give the same hits
	for _, be := range otherBackends() {
		ob := o
		ob.Backend = be
		om, err := retrieve.NewWith("seeder", re, ob)
		if err != nil {
			t.Fatal(err)
		}
		got, err := om.Retrieve(ctx, retrieve.Query{Text: qs[0].Text}, 10)
		retrieve.CloseAll(ctx, om)
		if err != nil {
			t.Fatalf("%s: %v", be.Name(), err)
		}
		if len(got) != len(hits) {
			t.Fatalf("%s: %d hits, cpu %d", be.Name(), len(got), len(hits))
		}
		for i := range got {
			if got[i].Index != hits[i].Index || math.Abs(float64(got[i].Score-hits[i].Score)) > 2e-5*(1+math.Abs(float64(hits[i].Score))) {
				t.Fatalf("%s: hit %d is %v, cpu's %v", be.Name(), i, got[i], hits[i])
			}
		}
	}
	// a smaller k cuts the scoring head's order of the Select best by
	// policy, not the policy's own top k
	top1, err := m.Retrieve(ctx, retrieve.Query{Text: qs[0].Text}, 1)
	if err != nil || len(top1) != 1 || top1[0] != hits[0] {
		t.Fatalf("k = 1 gave %v (%v), k = 10 starts with %v", top1, err, hits[0])
	}
	o.Seeder.Select = 0
	if _, err := retrieve.NewWith("seeder", re, o); err == nil {
		t.Fatal("select 0 accepted")
	}
}

// addSeeder trains a tiny encoder on c's questions and stores it, so
// every registered method runs over the index at dir.
func addSeeder(t *testing.T, c *corpus.Corpus, dir string) {
	t.Helper()
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	so := tinySeederOptions()
	so.Train.Epochs = 1
	sf, err := retrieve.TrainSeeder(context.Background(), ix, retrieve.DefaultOptions(), so, c.Queries[:10], c.Queries[10:14])
	ix.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := index.SetSeeder(context.Background(), dir, sf); err != nil {
		t.Fatal(err)
	}
}
