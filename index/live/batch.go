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
	ops []op
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
	Ops []op `json:"ops"`
}

func encodeRecord(ops []op) ([]byte, error) { return json.Marshal(record{Ops: ops}) }

// decodeRecord reads a logged batch; numbers in metadata keep their text,
// so replay stores what the commit stored.
func decodeRecord(b []byte) ([]op, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var r record
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	return r.Ops, nil
}
