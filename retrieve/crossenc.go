package retrieve

import (
	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/transformer"
)

// crossEncoder returns the reranking model a method uses: the transformer
// folder in o.Model, else the index's lexical cross-encoder. closer, when
// not nil, releases the model.
func crossEncoder(ix *index.Index, o Options) (ce *models.CrossEncoder, closer interface{ Close() error }, err error) {
	if err := o.validatePrecision(); err != nil {
		return nil, nil, err
	}
	if o.Model == "" {
		ce, err = ix.CrossEncoder()
		return ce, nil, err
	}
	b := o.Backend
	if b == nil {
		return nil, nil, errNoBackend
	}
	texts := func(n int32) string {
		node := corpus.Node{Title: ix.Title(int(n)), Text: ix.Text(int(n))}
		return index.IndexText(&node)
	}
	enc, head, err := transformer.Load(o.Model, o.Runtime, b, texts, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := enc.SetPrecision(o.Precision); err != nil {
		enc.Close()
		return nil, nil, err
	}
	if _, hash, ok := ix.Tokens(0); ok {
		enc.UseStoredTokens(hash, func(n int32) []int32 { ids, _, _ := ix.Tokens(int(n)); return ids })
	}
	return &models.CrossEncoder{Enc: enc, Head: head}, enc, nil
}
