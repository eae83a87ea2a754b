package models

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
)

// countEnc encodes (query, node) as [len(query), node] and counts pairs.
type countEnc struct{ pairs atomic.Int64 }

type prep string

func (p prep) Query() string { return string(p) }

func (e *countEnc) Name() string { return "count" }
func (e *countEnc) Dim() int     { return 2 }
func (e *countEnc) Prepare(_ context.Context, q string) (Prepared, error) {
	return prep(q), nil
}
func (e *countEnc) Encode(_ context.Context, q Prepared, nodes []int32, out []float32) error {
	e.pairs.Add(int64(len(nodes)))
	for i, n := range nodes {
		out[2*i], out[2*i+1] = float32(len(q.Query())), float32(n)
	}
	return nil
}

func TestSessionCachesAndBatches(t *testing.T) {
	enc := &countEnc{}
	svc, err := NewLatentService(enc, engine.SchedulerOptions{MaxBatch: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	var wg sync.WaitGroup
	for q := 0; q < 16; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("query %d", q)
			sess, _ := svc.Session(context.Background(), text, false)
			// a FastInsight-like pattern: rerank a growing list 10 times
			for round := 1; round <= 10; round++ {
				nodes := make([]int32, 10*round)
				for i := range nodes {
					nodes[i] = int32(i)
				}
				H, err := sess.Latents(context.Background(), nodes)
				if err != nil {
					t.Error(err)
					return
				}
				for i := range nodes {
					if H[2*i] != float32(len(text)) || H[2*i+1] != float32(i) {
						t.Errorf("query %d node %d: latent %v", q, i, H[2*i:2*i+2])
						return
					}
				}
			}
			if sess.Encoded() != 100 {
				t.Errorf("query %d: %d pairs encoded, want 100 (b_max)", q, sess.Encoded())
			}
		}()
	}
	wg.Wait()
	if enc.pairs.Load() != 16*100 {
		t.Errorf("encoder saw %d pairs", enc.pairs.Load())
	}
	sess, _ := svc.Session(context.Background(), "no cache", true)
	for round := 1; round <= 10; round++ {
		nodes := make([]int32, 10*round)
		for i := range nodes {
			nodes[i] = int32(i)
		}
		sess.Latents(context.Background(), nodes)
	}
	if sess.Encoded() != 550 {
		t.Errorf("without the cache: %d pairs, want 550", sess.Encoded())
	}
}
