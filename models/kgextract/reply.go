package kgextract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

type rawReply struct {
	Entities []struct {
		Name        *string `json:"name"`
		Type        *string `json:"type"`
		Description *string `json:"description"`
	} `json:"entities"`
	Relationships []struct {
		Source      *string  `json:"source"`
		Target      *string  `json:"target"`
		Description *string  `json:"description"`
		Weight      *float64 `json:"weight"`
	} `json:"relationships"`
}

// parseReply validates a reply's content against the prompt's format:
// one JSON object (a ```json fence around it is tolerated) with entities
// that have a name, a type and a description, and relationships between
// named entities of the same reply with a description and, when given, a
// finite weight > 0 (absent: 1). Unknown fields are refused.
func parseReply(content string) (Graph, error) {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var r rawReply
	if err := dec.Decode(&r); err != nil {
		return Graph{}, fmt.Errorf("not the JSON object asked for: %w", err)
	}
	if dec.More() {
		return Graph{}, errors.New("text after the JSON object")
	}
	var g Graph
	names := map[string]bool{}
	for i, e := range r.Entities {
		if e.Name == nil || strings.TrimSpace(*e.Name) == "" || e.Type == nil || e.Description == nil {
			return Graph{}, fmt.Errorf("entities[%d]: name, type and description are required", i)
		}
		g.Entities = append(g.Entities, Entity{Name: strings.TrimSpace(*e.Name), Type: strings.TrimSpace(*e.Type), Description: strings.TrimSpace(*e.Description)})
		names[NormalizeName(*e.Name)] = true
	}
	for i, rel := range r.Relationships {
		if rel.Source == nil || rel.Target == nil || rel.Description == nil {
			return Graph{}, fmt.Errorf("relationships[%d]: source, target and description are required", i)
		}
		for _, end := range []string{*rel.Source, *rel.Target} {
			if !names[NormalizeName(end)] {
				return Graph{}, fmt.Errorf("relationships[%d]: %q is not among the entities", i, end)
			}
		}
		w := 1.0
		if rel.Weight != nil {
			w = *rel.Weight
		}
		if math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 {
			return Graph{}, fmt.Errorf("relationships[%d]: weight %v: want a number > 0", i, w)
		}
		g.Relationships = append(g.Relationships, Relationship{Source: strings.TrimSpace(*rel.Source), Target: strings.TrimSpace(*rel.Target),
			Description: strings.TrimSpace(*rel.Description), Weight: w})
	}
	return g, nil
}
