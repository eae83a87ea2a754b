package eval

import (
	"bytes"
	"testing"
)

// FuzzTREC: a TREC run file in either tie order parses or fails with an
// error, never a panic.
func FuzzTREC(f *testing.F) {
	f.Add([]byte("q1 Q0 d1 1 2.5 run\nq1 Q0 d2 2 2.5 run\n"))
	f.Add([]byte("q1 Q0 d1 1 NaN run\nq1\tQ0\td1\t1\t1e400\trun\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeTREC(bytes.NewReader(b), "run.trec", false)
		decodeTREC(bytes.NewReader(b), "run.trec", true)
	})
}
