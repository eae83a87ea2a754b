package seeder_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/methods/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// TestSeederTrainStoreQuery trains on kgIndex, stores the encoder, and
// queries it after reopening: reproducible weights, the stored model equal
// to the trained one, distinct hits from the candidate graph.
func TestSeederTrainStoreQuery(t *testing.T) {
	env := testindex.Env()
	ix := kgIndex(t)
	o := seeder.DefaultKGOptions()
	o.GraphKinds = []string{"kg"}
	o.K0 = 1
	if _, err := retrieve.NewNamed("seeder", ix, env); !errors.Is(err, seeder.ErrNoSeeder) || !errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("seeder without an encoder: %v, want ErrNoSeeder", err)
	}
	qs := []corpus.Query{{ID: "a", Text: "Which country does Ann Lee live in?", Gold: []string{"france"}},
		{ID: "b", Text: "Which country does Bob Ray live in?", Gold: []string{"italy"}}}
	ctx := context.Background()
	sf, err := seeder.Train(ctx, ix, env, o, testindex.TinySeeder(), qs, qs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := seeder.Train(ctx, ix, env, o, testindex.TinySeeder(), qs, qs)
	if err != nil {
		t.Fatal(err)
	}
	want := sf.Model.Tensors()
	for name, tv := range again.Model.Tensors() {
		if !slices.Equal(tv.Data, want[name].Data) {
			t.Fatalf("a second training run gave a different %s", name)
		}
	}
	if len(sf.Epochs) != 5 || sf.Epochs[0].Epoch != 0 {
		t.Fatalf("%d epoch reports, want 5 (the text side's ranking, then 4 epochs)", len(sf.Epochs))
	}
	if sf.Paths == nil || sf.Paths.Hops != len(o.KHop.Quotas) || len(sf.PathVocab) != sf.Paths.Features || len(sf.PathEpochs) == 0 {
		t.Fatalf("text side: config %+v, %d features, %d epochs", sf.Paths, len(sf.PathVocab), len(sf.PathEpochs))
	}
	// a sampled training set's vocabulary holds only the sample's words
	one := testindex.TinySeeder()
	one.MaxTrain, one.MinWordCount, one.Train.Epochs = 1, 1, 1
	sampled, err := seeder.Train(ctx, ix, env, o, one, qs, qs)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(sampled.Vocab, "ann") == slices.Contains(sampled.Vocab, "bob") {
		t.Fatalf("vocabulary of a one-question sample: %v", sampled.Vocab)
	}
	if err := seeder.Set(ctx, ix.Dir, sf); err != nil {
		t.Fatal(err)
	}
	re, err := index.Open(ix.Dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	stored, err := seeder.Of(re)
	if err != nil {
		t.Fatal(err)
	}
	for name, tv := range stored.Model.Tensors() {
		if !slices.Equal(tv.Data, want[name].Data) {
			t.Fatalf("stored %s differs from the trained one", name)
		}
	}
	m, err := retrieve.NewNamed("seeder", re, env)
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
		om, err := retrieve.NewNamed("seeder", re, retrieve.Env{Backend: be})
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
	if _, err := testindex.NewMethod(re, "seeder", "seeder-select", "0"); err == nil {
		t.Fatal("select 0 accepted")
	}
}
