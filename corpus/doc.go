// Package corpus holds gleaner's data model — nodes, typed weighted edges,
// queries and relevance judgements — and the readers and writers that move it
// between gleaner JSONL, BEIR folders and the dataset layouts gleaner ships
// importers for.
//
// Every reader validates as it goes and reports problems as *RecordError,
// which names the file, the line (or record number) and the field.
package corpus
