package kgextract

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/models/ner"
)

func TestLocalCooccurrence(t *testing.T) {
	l, err := NewLocal(ner.NewGazetteer([]string{"Ann Lee", "Paris", "Rome"}, 2))
	if err != nil {
		t.Fatal(err)
	}
	g, u, err := l.Extract(context.Background(), "Ann Lee moved from Rome to Paris. Rome is old.")
	if err != nil || u != (Usage{}) {
		t.Fatal(err, u)
	}
	if len(g.Entities) != 4 || g.Entities[1].Name != "Rome" || g.Entities[3].Description != "Rome is old." {
		t.Fatalf("entities %+v", g.Entities)
	}
	want := [][2]string{{"Ann Lee", "Rome"}, {"Ann Lee", "Paris"}, {"Paris", "Rome"}} // pairs in name order
	if len(g.Relationships) != len(want) {
		t.Fatalf("relationships %+v", g.Relationships)
	}
	for i, r := range g.Relationships {
		if r.Source != want[i][0] || r.Target != want[i][1] || r.Weight != 1 || r.Description != "Ann Lee moved from Rome to Paris." {
			t.Fatalf("relationship %d: %+v", i, r)
		}
	}
	if NormalizeName(`  "The  Beatles".`) != "the beatles" {
		t.Fatal(NormalizeName(`  "The  Beatles".`))
	}
}

func TestCorruptCacheFileIsRefetched(t *testing.T) {
	dir := t.TempDir()
	key := cacheKey("m", "x")
	p := filepath.Join(dir, key[:2], key+".json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(filepath.Join(dir, cacheMarker), nil, 0o644)
	os.WriteFile(p, []byte(`{"content": `), 0o644) // a torn write from another tool
	f := &fakeServer{reply: func(_ int64, w http.ResponseWriter, _ *http.Request) { chat(w, goodContent) }}
	l, _ := testLLM(t, f, func(o *LLMOptions) { o.CacheDir = dir })
	if _, u, err := l.Extract(context.Background(), "x"); err != nil || u.Calls != 1 {
		t.Fatalf("usage %+v err %v", u, err)
	}
	if _, u, _ := l.Extract(context.Background(), "x"); u.CacheHits != 1 {
		t.Fatalf("the refetched reply was not cached: %+v", u)
	}
}

func TestCacheRefusesAForeignFolder(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("mine"), 0o644)
	if _, err := openCache(dir); err == nil {
		t.Fatal("a folder of someone's files became a cache")
	}
	c := filepath.Join(t.TempDir(), "cache")
	if _, err := openCache(c); err != nil {
		t.Fatal(err)
	}
	if _, err := openCache(c); err != nil {
		t.Fatalf("reopening a cache: %v", err)
	}
}
