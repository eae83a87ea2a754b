package index

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index/wal"
)

// WriteTo stores ix (an index Apply made, or an opened one) at dir as an
// index Open reads, replacing the index there atomically, with live as its
// place in the update log. expect is the manifest checksum of the index
// it replaces ("" when dir holds none): when another writer replaced that
// index since, WriteTo fails with ErrChanged rather than drop its work. It
// returns the new manifest's checksum. An index with deleted nodes is
// written compacted (Compact).
func (ix *Index) WriteTo(ctx context.Context, dir string, live *LiveState, expect string) (string, error) {
	if ix.ndead > 0 {
		c, err := ix.Compact(ctx)
		if err != nil {
			return "", err
		}
		defer c.Close()
		return c.WriteTo(ctx, dir, live, expect)
	}
	meta := ix.Meta
	meta.Live = live
	b := &built{post: ix.Postings.Flat(), lsa: ix.LSA, vecs: ix.Vectors, dims: ix.Meta.Dims, graph: ix.graphToWrite(ctx), rels: ix.rels}
	if b.post != ix.Postings && ix.LSA != nil { // flattened: the term ids change
		b.lsa = ix.LSA.Remap(ix.Postings.Terms, b.post.Terms)
	}
	err := store.Build(dir, func(w *store.Writer) (map[string]any, error) {
		for _, f := range []func(*store.Writer) error{ix.writeNodeStore, b.writeGraph, b.writePostings, b.writeVectors, ix.copySections} {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := f(w); err != nil {
				return nil, err
			}
		}
		if err := checkManifest(dir, expect); err != nil {
			return nil, err
		}
		return map[string]any{"index": meta}, nil
	})
	if err != nil {
		return "", err
	}
	return manifestChecksum(dir)
}

// writeNodeStore writes the node strings and provenance as they are.
func (ix *Index) writeNodeStore(w *store.Writer) error {
	if err := firstErr(w.Bytes(fNodeStrings, ix.strs), w.I64(fNodeOff, ix.off)); err != nil {
		return err
	}
	if ix.docOff == nil {
		return nil
	}
	return firstErr(w.Bytes(fNodeDoc, ix.docStrs), w.I64(fNodeDocOff, ix.docOff), w.I64(fNodeSpan, ix.spans))
}

// copySections copies the files of the sections ix carries (or writes
// those built in memory).
func (ix *Index) copySections(w *store.Writer) error {
	for sec, rec := range ix.Meta.Sections {
		for _, name := range rec.Files {
			if mem := ix.sections[sec].mem; mem != nil {
				if err := writeMem(w, name, mem[name]); err != nil {
					return err
				}
				continue
			}
			data, fi, ok := ix.r.Raw(name)
			if !ok {
				return fmt.Errorf("index: section file %s is not in the index it came from", name)
			}
			if err := w.Stream(name, fi.Kind, func(out io.Writer) error { _, err := out.Write(data); return err }); err != nil {
				return err
			}
		}
	}
	return nil
}

// LogDir is where the update log of the index at dir lives (index/live):
// beside the index, so that a rewrite of the index folder never moves it.
func LogDir(dir string) string { return store.Target(dir) + ".wal" }

// checkNoWriter refuses to replace the index at dir while a live writer
// has it open: the writer would overwrite the result at its next
// checkpoint.
func checkNoWriter(dir string) error {
	if wal.Locked(LogDir(dir)) {
		return fmt.Errorf("index %s: a live writer has it open (gleaner serve --writes, gleaner add): stop it first, or make the change through it", dir)
	}
	return nil
}

// checkManifest fails with ErrChanged unless the index at dir has the
// manifest checksum expect ("": no index there).
func checkManifest(dir, expect string) error {
	got, err := manifestChecksum(dir)
	if os.IsNotExist(err) && expect == "" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("index %s: %w", dir, err)
	}
	if got != expect {
		return fmt.Errorf("index %s: %w", dir, ErrChanged)
	}
	return nil
}

// manifestChecksum reads the checksum of the manifest at dir.
func manifestChecksum(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, store.ManifestFile))
	if err != nil {
		return "", err
	}
	var m struct {
		Checksum string `json:"checksum"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Checksum == "" {
		return "", fmt.Errorf("%w %s: unreadable manifest", store.ErrCorrupt, dir)
	}
	return m.Checksum, nil
}
