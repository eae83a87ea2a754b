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
	"regexp"
	"strconv"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/internal/safefile"
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

// MaxDims bounds a vector's dimension (the widest embedders have a few
// thousand), so one malformed record cannot ask for gigabytes.
const MaxDims = 1 << 16

func readVectorsJSONL(path string, ids []string) ([]float32, int, error) {
	f, err := safefile.Open(path, safefile.MaxWeights)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return decodeVectorsJSONL(f, path, ids)
}

func decodeVectorsJSONL(r io.Reader, path string, ids []string) ([]float32, int, error) {
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	var out []float32
	d, seen := 0, make([]bool, len(ids))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), corpus.MaxRecordBytes)
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
		case len(rec.Vector) > MaxDims:
			return nil, 0, &corpus.RecordError{File: path, Line: line, Field: "vector", Err: fmt.Errorf("%w: %d values, over the limit of %d", corpus.ErrMalformed, len(rec.Vector), MaxDims)}
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
	f, err := safefile.Open(path, safefile.MaxWeights)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	return decodeNPY(bufio.NewReaderSize(f, 1<<20), st.Size(), path, rows)
}

// maxNPYHeader bounds a .npy header (numpy writes a few hundred bytes).
const maxNPYHeader = 1 << 20

// decodeNPY reads a .npy of size bytes from r; the shape must match the
// file's size exactly before anything is allocated.
func decodeNPY(r io.Reader, size int64, path string, rows int) ([]float32, int, error) {
	hdr, hlen, err := npyHeader(r, size)
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
	n, err1 := strconv.Atoi(m[1])
	d, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || n != rows || d == 0 || d > MaxDims {
		return nil, 0, &corpus.RecordError{File: path, Field: "shape", Err: fmt.Errorf("shape (%s, %s), want (%d, 0<d≤%d)", m[1], m[2], rows, MaxDims)}
	}
	if data := size - hlen; int64(d) > data/4 || int64(n)*int64(d)*4 != data {
		return nil, 0, &corpus.RecordError{File: path, Field: "data", Err: fmt.Errorf("shape (%d, %d) needs %d bytes of data, the file has %d (truncated or wrong shape)", n, d, int64(n)*int64(d)*4, data)}
	}
	out := make([]float32, n*d)
	if err := binary.Read(r, binary.LittleEndian, out); err != nil {
		return nil, 0, &corpus.RecordError{File: path, Field: "data", Err: fmt.Errorf("truncated: %v", err)}
	}
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, 0, &corpus.RecordError{File: path, Line: i/d + 1, Field: fmt.Sprintf("row %d, column %d", i/d, i%d), Err: corpus.ErrNotFinite}
		}
	}
	return out, d, nil
}

// npyHeader returns the header text and the offset where the data starts.
func npyHeader(r io.Reader, size int64) (string, int64, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil || string(pre[:6]) != "\x93NUMPY" {
		return "", 0, fmt.Errorf("not a .npy file")
	}
	var hlen, lenBytes int64
	if pre[6] == 1 {
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", 0, err
		}
		hlen, lenBytes = int64(binary.LittleEndian.Uint16(b[:])), 2
	} else {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", 0, err
		}
		hlen, lenBytes = int64(binary.LittleEndian.Uint32(b[:])), 4
	}
	start := 8 + lenBytes + hlen
	if hlen > maxNPYHeader || start > size {
		return "", 0, fmt.Errorf("header of %d bytes does not fit the file (%d bytes) or exceeds %d", hlen, size, maxNPYHeader)
	}
	h := make([]byte, hlen)
	if _, err := io.ReadFull(r, h); err != nil {
		return "", 0, err
	}
	return string(h), start, nil
}
