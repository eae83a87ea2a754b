// Package models holds the interfaces and file formats of gleaner's models;
// its subpackages hold the models themselves (lexical: BM25 and LSA).
package models

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
)

// ReadVectors reads user-supplied vectors, e.g. from an embedding API, and
// returns them row-major in the order of ids, with their dimension:
//   - .npy: a float32 ('<f4') C-order array of shape (len(ids), d), row i
//     belonging to ids[i];
//   - .jsonl: one {"id": ..., "vector": [...]} per line, every id present.
//
// NaN or infinite values, ragged or missing rows and unknown ids are errors
// naming the file and record.
func ReadVectors(path string, ids []string) ([]float32, int, error) {
	if strings.HasSuffix(path, ".npy") {
		return readNPY(path, len(ids))
	}
	return readVectorsJSONL(path, ids)
}

func readVectorsJSONL(path string, ids []string) ([]float32, int, error) {
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var out []float32
	d, seen := 0, make([]bool, len(ids))
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var rec struct {
			ID     string    `json:"id"`
			Vector []float64 `json:"vector"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, 0, &corpus.RecordError{File: path, Line: line, Err: fmt.Errorf("%w: %v", corpus.ErrMalformed, err)}
		}
		i, ok := pos[rec.ID]
		switch {
		case !ok:
			return nil, 0, &corpus.RecordError{File: path, Line: line, Field: "id", Err: fmt.Errorf("%w %q", corpus.ErrUnknownID, rec.ID)}
		case seen[i]:
			return nil, 0, &corpus.RecordError{File: path, Line: line, Field: "id", Err: fmt.Errorf("%w %q", corpus.ErrDuplicate, rec.ID)}
		case len(rec.Vector) == 0:
			return nil, 0, &corpus.RecordError{File: path, Line: line, Field: "vector", Err: corpus.ErrMissing}
		}
		if d == 0 {
			d = len(rec.Vector)
			out = make([]float32, len(ids)*d)
		}
		if len(rec.Vector) != d {
			return nil, 0, &corpus.RecordError{File: path, Line: line, Field: "vector", Err: fmt.Errorf("%d values, earlier records have %d", len(rec.Vector), d)}
		}
		for j, v := range rec.Vector {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
				return nil, 0, &corpus.RecordError{File: path, Line: line, Field: fmt.Sprintf("vector[%d]", j), Err: fmt.Errorf("%w: %v", corpus.ErrNotFinite, v)}
			}
			out[i*d+j] = float32(v)
		}
		seen[i] = true
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	for i, ok := range seen {
		if !ok {
			return nil, 0, &corpus.RecordError{File: path, Field: "id", Err: fmt.Errorf("%w: no vector for %q", corpus.ErrMissing, ids[i])}
		}
	}
	return out, d, nil
}

var npyShape = regexp.MustCompile(`'shape':\s*\((\d+),\s*(\d+)\)`)

// readNPY reads a 2-D little-endian float32 .npy file (format 1.0–3.0).
func readNPY(path string, rows int) ([]float32, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	hdr, err := npyHeader(f)
	if err != nil {
		return nil, 0, &corpus.RecordError{File: path, Field: "header", Err: err}
	}
	if !strings.Contains(hdr, "'<f4'") || strings.Contains(hdr, "'fortran_order': True") {
		return nil, 0, &corpus.RecordError{File: path, Field: "header", Err: fmt.Errorf("want a C-order '<f4' (float32) array, header is %s", hdr)}
	}
	m := npyShape.FindStringSubmatch(hdr)
	if m == nil {
		return nil, 0, &corpus.RecordError{File: path, Field: "shape", Err: fmt.Errorf("want a 2-D array, header is %s", hdr)}
	}
	n, _ := strconv.Atoi(m[1])
	d, _ := strconv.Atoi(m[2])
	if n != rows || d == 0 {
		return nil, 0, &corpus.RecordError{File: path, Field: "shape", Err: fmt.Errorf("shape (%d, %d), want (%d, d>0)", n, d, rows)}
	}
	out := make([]float32, n*d)
	if err := binary.Read(bufio.NewReaderSize(f, 1<<20), binary.LittleEndian, out); err != nil {
		return nil, 0, &corpus.RecordError{File: path, Field: "data", Err: fmt.Errorf("truncated: %v", err)}
	}
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, 0, &corpus.RecordError{File: path, Line: i/d + 1, Field: fmt.Sprintf("row %d, column %d", i/d, i%d), Err: corpus.ErrNotFinite}
		}
	}
	return out, d, nil
}

func npyHeader(r io.Reader) (string, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil || string(pre[:6]) != "\x93NUMPY" {
		return "", fmt.Errorf("not a .npy file")
	}
	var hlen int
	if pre[6] == 1 {
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	} else {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
	}
	h := make([]byte, hlen)
	if _, err := io.ReadFull(r, h); err != nil {
		return "", err
	}
	return string(h), nil
}
