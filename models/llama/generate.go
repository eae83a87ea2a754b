package llama

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// GenerateOptions configure Generate.
type GenerateOptions struct {
	// MaxTokens bounds the generated tokens (≥ 1).
	MaxTokens int
	// Temperature 0 decodes greedily (the lowest id wins a tie); > 0
	// samples from softmax(logits / Temperature).
	Temperature float64
	// Seed seeds temperature sampling.
	Seed uint64
	// Stop ends generation when one of these ids is produced (it is not
	// emitted); nil uses the model's eos_token_id.
	Stop []int32
}

// Validate checks the options.
func (o GenerateOptions) Validate() error {
	switch {
	case o.MaxTokens < 1:
		return fmt.Errorf("llama: generate at least 1 token, got max %d", o.MaxTokens)
	case !(o.Temperature >= 0) || math.IsInf(o.Temperature, 1):
		return fmt.Errorf("llama: temperature must be finite and ≥ 0, got %v", o.Temperature)
	}
	return nil
}

// Stats times one Generate call.
type Stats struct {
	PromptTokens int
	Prefill      time.Duration // the prompt's forward pass
	FirstToken   time.Duration // prefill plus choosing the first token
	Tokens       int           // tokens emitted
	Decode       time.Duration // every later step
}

// Generate feeds prompt (at least one token; a session that already holds
// a sequence continues it) and decodes until a stop token, MaxTokens, or emit returning
// false; each token is passed to emit as soon as it is chosen.
func (s *Session) Generate(ctx context.Context, prompt []int32, o GenerateOptions, emit func(id int32) bool) (Stats, error) {
	var st Stats
	if err := o.Validate(); err != nil {
		return st, err
	}
	if len(prompt) == 0 {
		return st, fmt.Errorf("llama: generate needs at least one prompt token")
	}
	if o.MaxTokens-1 > s.cap-s.pos-len(prompt) { // no overflow for a huge MaxTokens
		return st, fmt.Errorf("llama: %d prompt tokens + %d new ones overflow the session's %d positions (%d used)", len(prompt), o.MaxTokens, s.cap, s.pos)
	}
	stop := o.Stop
	if stop == nil {
		for _, id := range s.m.Cfg.EOSTokenID {
			stop = append(stop, int32(id))
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6c6c616d61))
	start := time.Now()
	st.PromptTokens = len(prompt)
	logits, err := s.Forward(ctx, prompt, false)
	st.Prefill = time.Since(start)
	if err != nil {
		return st, err
	}
	for step := 0; ; step++ {
		if err := checkFinite(logits); err != nil {
			return st, err
		}
		id := pick(logits, o.Temperature, rng)
		if step == 0 {
			st.FirstToken = time.Since(start)
		}
		if slices.Contains(stop, id) || !emit(id) {
			break
		}
		st.Tokens++
		if st.Tokens == o.MaxTokens {
			break
		}
		t := time.Now()
		logits, err = s.Forward(ctx, []int32{id}, false)
		st.Decode += time.Since(t)
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// pick chooses the next token: argmax, or a sample at temperature t.
func pick(logits []float32, t float64, rng *rand.Rand) int32 {
	best := 0
	for i, x := range logits {
		if x > logits[best] {
			best = i
		}
	}
	if t == 0 {
		return int32(best)
	}
	top := float64(logits[best])
	cum := make([]float64, len(logits))
	z := 0.0
	for i, x := range logits {
		z += math.Exp((float64(x) - top) / t)
		cum[i] = z
	}
	u := rng.Float64() * z
	i, _ := slices.BinarySearch(cum, u)
	return int32(min(i, len(logits)-1))
}

// checkFinite refuses NaN or infinite logits: NaN or infinite weights
// would otherwise decode as token 0 over and over.
func checkFinite(logits []float32) error {
	for i, x := range logits {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("llama: the logit of token %d is %v: the weights hold NaN or infinite values", i, x)
		}
	}
	return nil
}
