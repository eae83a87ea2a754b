package kgextract

import (
	"math"
	"testing"
)

// FuzzReply feeds arbitrary reply contents to the validator: it must never
// panic, and what it accepts must hold the format's promises.
func FuzzReply(f *testing.F) {
	f.Add(goodContent)
	f.Add("```json\n" + goodContent + "\n```")
	f.Add(`{"entities": [], "relationships": []}`)
	f.Add(`{"entities": [{"name": "A", "type": "", "description": ""}], "relationships": [{"source": "a", "target": "A.", "description": "", "weight": 1e308}]}`)
	f.Add(`[1, 2]`)
	f.Fuzz(func(t *testing.T, content string) {
		g, _, err := parseReply(content)
		if err != nil {
			return
		}
		names := map[string]bool{}
		for _, e := range g.Entities {
			if e.Name == "" {
				t.Fatal("accepted an entity without a name")
			}
			names[NormalizeName(e.Name)] = true
		}
		for _, r := range g.Relationships {
			if !names[NormalizeName(r.Source)] || !names[NormalizeName(r.Target)] || !(r.Weight > 0) || math.IsInf(r.Weight, 0) {
				t.Fatalf("accepted relationship %+v", r)
			}
		}
	})
}
