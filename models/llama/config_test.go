package llama

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Llama 3's rope scaling keeps short wavelengths, divides long ones by the
// factor and blends in between (HuggingFace's _compute_llama3_parameters).
func TestLlama3RopeScaling(t *testing.T) {
	c := Llama32_1BConfig()
	inv := c.InvFreq()
	plain := func(i int) float64 { return math.Pow(c.RopeTheta, -2*float64(i)/float64(c.HeadDim)) }
	if inv[0] != 1 {
		t.Errorf("the highest frequency must stay 1, got %v", inv[0])
	}
	last := len(inv) - 1
	if got, want := float64(inv[last]), plain(last)/32; math.Abs(got-want) > 1e-6*want {
		t.Errorf("the lowest frequency must be divided by 32: %v, want %v", got, want)
	}
	blended := 0
	for i := range inv {
		f := plain(i)
		wave := 2 * math.Pi / f
		if wave >= 8192/4.0 && wave <= 8192 {
			blended++
			if !(float64(inv[i]) < f && float64(inv[i]) > f/32) {
				t.Errorf("frequency %d (wavelength %.0f) must lie strictly between f/32 and f", i, wave)
			}
		}
	}
	if blended == 0 {
		t.Error("no frequency in the blended band: the test checks nothing there")
	}
}

func TestLoadConfigDefaultsAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	os.WriteFile(p, []byte(`{"model_type":"llama","vocab_size":10,"hidden_size":16,"intermediate_size":32,"num_hidden_layers":1,"num_attention_heads":4,"max_position_embeddings":8,"eos_token_id":[1,2]}`), 0o644)
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.KVHeads != 4 || c.HeadDim != 4 || c.RopeTheta != 10000 || c.RMSNormEps != 1e-6 || len(c.EOSTokenID) != 2 {
		t.Errorf("HuggingFace defaults not applied: %+v", c)
	}
	os.WriteFile(p, []byte(`{"model_type":"gpt2","vocab_size":10,"hidden_size":16,"intermediate_size":32,"num_hidden_layers":1,"num_attention_heads":3,"num_key_value_heads":2,"max_position_embeddings":8,"hidden_act":"gelu"}`), 0o644)
	_, err = LoadConfig(p)
	if err == nil {
		t.Fatal("a bad config loaded")
	}
	for _, want := range []string{"config.json", "model_type", "num_key_value_heads", "hidden_act"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
