// Package index builds and opens gleaner's on-disk index: the node store,
// the graph in both directions with degrees, BM25 postings, the dense vector
// matrix and the fitted LSA model, held in a corpus/store folder.
//
// It is a top-level package because it composes corpus, graphops and
// models/lexical, which sit below it, for retrieve and the CLI above it.
//
// An opened *Index is immutable and safe for concurrent use.
package index
