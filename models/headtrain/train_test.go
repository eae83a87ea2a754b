//go:build !cuda

package headtrain

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
)

// synthetic groups: feature 0 separates the positive (mean +1) from the
// negatives (mean −1); feature 1 is noise.
func groups(n, k int, seed uint64) []Group {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]Group, n)
	for i := range out {
		l := make([]float32, 0, (1+k)*2)
		for j := 0; j <= k; j++ {
			m := -1.0
			if j == 0 {
				m = 1
			}
			l = append(l, float32(m+0.5*rng.NormFloat64()), float32(rng.NormFloat64()))
		}
		out[i].Latents = l
	}
	return out
}

func TestTrainLearnsAndIsDeterministic(t *testing.T) {
	train, test := groups(256, 3, 1), groups(200, 3, 2)
	o := DefaultOptions()
	o.Epochs, o.Seed = 20, 5
	res, err := Train(context.Background(), train, 2, 3, o)
	if err != nil {
		t.Fatal(err)
	}
	if first, last := res.Losses[0], res.Losses[len(res.Losses)-1]; !(last < first*0.5) {
		t.Errorf("loss went from %v to %v", first, last)
	}
	correct := 0
	scores := make([]float32, 4)
	for _, g := range test {
		res.Head.Score(g.Latents, 4, scores)
		if scores[0] > scores[1] && scores[0] > scores[2] && scores[0] > scores[3] {
			correct++
		}
	}
	if correct < 190 {
		t.Errorf("positive ranked first in %d of 200 held-out groups", correct)
	}
	again, _ := Train(context.Background(), train, 2, 3, o)
	if !reflect.DeepEqual(again.Head, res.Head) {
		t.Error("same data and seed gave a different head")
	}
	if _, err := Train(context.Background(), train[:3], 2, 3, o); err == nil {
		t.Error("too few groups accepted")
	}
}
