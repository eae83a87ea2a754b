package store

import (
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"sync/atomic"
)

// spanBytes is how much of a file one checksum task covers: a file is
// split so that every core stays busy when one file is most of the store
// (the vectors are a third of a 10⁶-passage index).
const spanBytes = 16 << 20

// readBytes is the buffer each worker reads a file through.
const readBytes = 1 << 20

// span is one task: bytes [off, off+n) of file.
type span struct {
	file   int
	off, n int64
}

// sumSpan checksums one span into buf-sized reads (buf is the worker's).
type sumSpan func(s span, buf []byte) (uint32, error)

// checksumFiles computes the CRC-32C of files of the given sizes on
// workers goroutines, spanLen bytes at a time, and folds each file's
// spans into its checksum in order; each worker's buffer holds bufLen
// bytes (0 where sum reads memory). errs[i] is the first error met in
// file i.
func checksumFiles(sizes []int64, spanLen int64, workers, bufLen int, sum sumSpan) (sums []uint32, errs []error) {
	spans := splitSpans(sizes, spanLen)
	got := make([]uint32, len(spans))
	spanErrs := make([]error, len(spans))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(spans)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, bufLen)
			for i := int(next.Add(1) - 1); i < len(spans); i = int(next.Add(1) - 1) {
				got[i], spanErrs[i] = sum(spans[i], buf)
			}
		}()
	}
	wg.Wait()
	sums, errs = make([]uint32, len(sizes)), make([]error, len(sizes))
	for i, s := range spans {
		if errs[s.file] == nil {
			errs[s.file] = spanErrs[i]
		}
		if s.off == 0 {
			sums[s.file] = got[i]
		} else {
			sums[s.file] = crc32cCombine(sums[s.file], got[i], s.n)
		}
	}
	return sums, errs
}

// splitSpans cuts every file into spans of at most spanLen bytes, in file
// and offset order; an empty file has none (its checksum is 0).
func splitSpans(sizes []int64, spanLen int64) []span {
	var spans []span
	for f, size := range sizes {
		for off := int64(0); off < size; off += spanLen {
			spans = append(spans, span{file: f, off: off, n: min(spanLen, size-off)})
		}
	}
	return spans
}

// crcAt checksums n bytes of r from off, reading through buf.
func crcAt(r io.ReaderAt, off, n int64, buf []byte) (uint32, error) {
	var sum uint32
	for n > 0 {
		b := buf[:min(int64(len(buf)), n)]
		if got, err := r.ReadAt(b, off); got < len(b) { // a full read may come with io.EOF
			return 0, fmt.Errorf("%d bytes at %d: read %d: %v (truncated since opened?)", len(b), off, got, err)
		}
		sum = crc32.Update(sum, castagnoli, b)
		off, n = off+int64(len(b)), n-int64(len(b))
	}
	return sum, nil
}

// crc32cCombine returns the CRC-32C of A‖B from crcA, crcB and B's
// length (zlib's crc32_combine: multiply crcA by x^(8·lenB) modulo the
// polynomial, by repeated squaring of the one-zero-bit operator).
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	odd[0] = crc32.Castagnoli // the operator for one zero bit
	for i, row := 1, uint32(1); i < 32; i, row = i+1, row<<1 {
		odd[i] = row
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four
	for {
		gf2Square(&even, &odd) // one zero byte, then doubling
		if lenB&1 != 0 {
			crcA = gf2Times(&even, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
		gf2Square(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2Times(&odd, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

// gf2Times multiplies the 32×32 bit matrix m by the vector v over GF(2).
func gf2Times(m *[32]uint32, v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

// gf2Square sets sq to m·m.
func gf2Square(sq, m *[32]uint32) {
	for i := range m {
		sq[i] = gf2Times(m, m[i])
	}
}
