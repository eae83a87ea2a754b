package tiktoken

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Known cl100k_base encodings (checked against OpenAI's tiktoken).
func TestCL100KKnownIDs(t *testing.T) {
	e, err := CL100K()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]int{
		"hello world":        {15339, 1917},
		"Hello world":        {9906, 1917},
		"tiktoken is great!": {83, 1609, 5963, 374, 2294, 0}, // OpenAI cookbook
		"":                   nil,
	}
	for text, want := range cases {
		if got := e.Encode(text); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestRoundTripAndByteLen(t *testing.T) {
	e, _ := CL100K()
	text := "Teutberga( died 11 November 875) was a queen — of Lotharingia.\nÉcole <|endoftext|> 東京"
	ids := e.Encode(text)
	if got := e.Decode(ids); got != text {
		t.Fatalf("round trip: %q", got)
	}
	n := 0
	for _, id := range ids {
		n += e.ByteLen(id)
	}
	if n != len(text) {
		t.Fatalf("token byte lengths sum to %d, text has %d bytes", n, len(text))
	}
	if e.Count(text) != len(ids) {
		t.Fatal("Count differs from len(Encode)")
	}
}

func TestDecodeCutCharacterIsValidUTF8(t *testing.T) {
	e, _ := CL100K()
	ids := e.Encode("😀 smile") // the emoji is several byte tokens
	cut := e.Decode(ids[:1])
	if !utf8.ValidString(cut) || !strings.ContainsRune(cut, 0xFFFD) {
		t.Fatalf("a cut through a character decodes to %q, want U+FFFD", cut)
	}
}

func TestConcurrentEncode(t *testing.T) {
	e, _ := CL100K()
	want := e.Encode("a passage about Benevento Calcio and its stadium")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if got := e.Encode("a passage about Benevento Calcio and its stadium"); !slices.Equal(got, want) {
					t.Error("concurrent encode differs")
					return
				}
			}
		}()
	}
	wg.Wait()
}
