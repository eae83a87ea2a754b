package server

import (
	"bytes"
	"testing"
)

// FuzzDecodeRequest: any body decodes to a checked request or a FieldError,
// never a panic, and an accepted request satisfies the limits.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"index":"synth","query":"band city","method":"fastinsight","k":5,"stream":true,"options":{"bmax":30}}`))
	f.Add([]byte(`{"index":"a","query":"q","k":0} trailing`))
	l := Limits{MaxBodyBytes: 4096, MaxQueryBytes: 256, MaxK: 100}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeRequest(bytes.NewReader(b), l)
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("error %T, want *FieldError: %v", err, err)
			}
			return
		}
		if req.Index == "" || req.K == nil || *req.K < 1 || *req.K > l.MaxK || len(req.Query) > l.MaxQueryBytes {
			t.Fatalf("accepted %+v", req)
		}
	})
}
