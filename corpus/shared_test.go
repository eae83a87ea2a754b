package corpus_test

import (
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/internal/testdata"
)

func TestSharedSciFact(t *testing.T) {
	c, err := corpus.ReadBEIR(testdata.Dataset(t, "beir_scifact"), "test", corpus.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gold := 0
	for _, q := range c.Queries {
		gold += len(q.Gold)
	}
	// counts from the datasets README: 5,183 docs, 300 test queries, 339 qrels
	if len(c.Nodes) != 5183 || len(c.Queries) != 300 || gold != 339 {
		t.Errorf("scifact: %d nodes, %d queries, %d gold; want 5183, 300, 339", len(c.Nodes), len(c.Queries), gold)
	}
}

func TestSharedTwoWiki(t *testing.T) {
	c, err := corpus.ReadTwoWiki(testdata.Dataset(t, "hipporag_2wikimultihopqa"), corpus.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gold := 0
	for _, q := range c.Queries {
		gold += len(q.Gold)
	}
	// 6,119 passages with unique titles, 1,000 questions, 2,470 gold titles
	if len(c.Nodes) != 6119 || len(c.Queries) != 1000 || gold != 2470 {
		t.Errorf("2wiki: %d nodes, %d queries, %d gold; want 6119, 1000, 2470", len(c.Nodes), len(c.Queries), gold)
	}
}
