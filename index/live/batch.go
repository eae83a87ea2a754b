package live

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/corpus"
)

// Document is what Add and Replace store under one document id: its
// passages (every node's Document() is the id: a node that is its own
// document has the id as its ID and no Doc) and the edges that start at
// them. Vectors, when given, are the nodes' vectors (nodes × the index's
// dimensions); an index of precomputed vectors needs them, any other
// embeds the nodes itself.
type Document struct {
	ID      string
	Nodes   []corpus.Node
	Edges   []corpus.Edge
	Vectors []float32
}

// NodeDocument is the document of one node: its own, or the one it was
// cut from.
func NodeDocument(n corpus.Node) Document { return Document{ID: n.Document(), Nodes: []corpus.Node{n}} }

// Batch is a list of changes committed together: all of them or none.
// A Batch is not safe for concurrent use; build it, then Commit it.
type Batch struct {
	ops    []op
	source uint64
}

// SetSource numbers the batch in the log it came from (a fleet's stream,
// index/fleet), > 0. A writer applies numbered batches in order, each
// once: a batch whose number is not the one after the last it took is
// refused with ErrOutOfOrder, and the writer remembers the last number
// through its log and checkpoints (Writer.Source).
func (b *Batch) SetSource(seq uint64) { b.source = seq }

// Source is the batch's number in the log it came from (0: none).
func (b *Batch) Source() uint64 { return b.source }

// MarshalBinary encodes the batch as the update log stores it (without
// its source number).
func (b *Batch) MarshalBinary() ([]byte, error) { return encodeRecord(b.ops, 0) }

// DecodeBatch reads a batch MarshalBinary encoded; it fails on anything
// else, naming what it could not read.
func DecodeBatch(payload []byte) (*Batch, error) {
	ops, _, err := decodeRecord(payload)
	if err != nil {
		return nil, fmt.Errorf("live: decoding a batch: %w", err)
	}
	for i, x := range ops {
		switch x.Kind {
		case opAdd, opReplace, opDelete:
		default:
			return nil, fmt.Errorf("live: decoding a batch: change %d: field op: %q is not add, replace or delete", i+1, x.Kind)
		}
	}
	return &Batch{ops: ops}, nil
}

type op struct {
	Kind    string        `json:"op"` // add, replace, delete
	ID      string        `json:"id"`
	Nodes   []corpus.Node `json:"nodes,omitempty"`
	Edges   []corpus.Edge `json:"edges,omitempty"`
	Vectors []byte        `json:"vectors,omitempty"` // little-endian float32
}

const (
	opAdd     = "add"
	opReplace = "replace"
	opDelete  = "delete"
)

// Add adds a document; committing fails if the index has one of that id.
func (b *Batch) Add(d Document) { b.ops = append(b.ops, newOp(opAdd, d)) }

// Replace replaces the document of d's id with d, or adds it when the
// index has none.
func (b *Batch) Replace(d Document) { b.ops = append(b.ops, newOp(opReplace, d)) }

// Delete deletes the document id (every passage cut from it); committing
// fails if the index has none.
func (b *Batch) Delete(id string) { b.ops = append(b.ops, op{Kind: opDelete, ID: id}) }

// NeedsVectors reports whether a document the batch adds or replaces has
// no vectors: the writer that applies it embeds them (Writer.Embed).
func (b *Batch) NeedsVectors() bool {
	for i := range b.ops {
		if b.ops[i].Kind != opDelete && b.ops[i].Vectors == nil {
			return true
		}
	}
	return false
}

// Len is the number of changes in the batch.
func (b *Batch) Len() int { return len(b.ops) }

func newOp(kind string, d Document) op {
	o := op{Kind: kind, ID: d.ID, Nodes: d.Nodes, Edges: d.Edges}
	if d.Vectors != nil {
		o.Vectors = packFloats(d.Vectors)
	}
	return o
}

func packFloats(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func unpackFloats(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vectors of %d bytes are not float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// record is a batch as the log stores it.
type record struct {
	Ops    []op   `json:"ops"`
	Source uint64 `json:"source,omitempty"` // Batch.SetSource
}

func encodeRecord(ops []op, source uint64) ([]byte, error) {
	return json.Marshal(record{Ops: ops, Source: source})
}

// decodeRecord reads a logged batch; numbers in metadata keep their text,
// so replay stores what the commit stored.
func decodeRecord(b []byte) ([]op, uint64, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var r record
	if err := dec.Decode(&r); err != nil {
		return nil, 0, err
	}
	return r.Ops, r.Source, nil
}
