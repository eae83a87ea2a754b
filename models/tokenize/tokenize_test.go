package tokenize

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestBERTTokenizerWithAccentsAndPairs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := WriteBERT(path, []string{"naive", "cafe", "run", "##s", "the", "city", "of", "paris", "."}); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tk.IDs("Naïve CAFÉ runs.")
	if err != nil {
		t.Fatal(err)
	}
	// naive=5 cafe=6 run=7 ##s=8 .=13 (specials take 0–4)
	if want := []int32{5, 6, 7, 8, 13}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %v, want %v (accents must be stripped, not [UNK]=1)", ids, want)
	}
	q, _ := tk.IDs("the city")
	d, _ := tk.IDs("paris paris paris paris runs")
	pair, types := tk.Pair(q, d, 8)
	if want := []int32{2, 9, 10, 3, 12, 12, 12, 3}; !reflect.DeepEqual(pair, want) {
		t.Errorf("pair %v, want %v (LongestFirst trims the node)", pair, want)
	}
	if want := []int32{0, 0, 0, 0, 1, 1, 1, 1}; !reflect.DeepEqual(types, want) {
		t.Errorf("types %v", types)
	}
}

func TestXLMRUnigramTokenizer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	pieces := []string{"▁the", "▁city", "▁of", "▁paris", "▁run", "s", "▁", "p", "a", "r", "i", "x"}
	if err := WriteXLMR(path, pieces); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tk.IDs("the city of paris runs")
	if err != nil {
		t.Fatal(err)
	}
	// ▁the=4 ▁city=5 ▁of=6 ▁paris=7 ▁run=8 s=9
	if want := []int32{4, 5, 6, 7, 8, 9}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	pair, types := tk.Pair(ids[:2], ids[2:4], 16)
	if want := []int32{0, 4, 5, 2, 2, 6, 7, 2}; !reflect.DeepEqual(pair, want) {
		t.Errorf("pair %v, want %v", pair, want)
	}
	for _, ty := range types {
		if ty != 0 {
			t.Errorf("XLM-R type ids must be 0: %v", types)
			break
		}
	}
	if tk.Pad() != 1 {
		t.Errorf("pad id %d", tk.Pad())
	}
}
