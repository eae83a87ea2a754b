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

// parseReply validates a reply's content. Its shape is strict: one JSON
// object (a ```json fence around it is tolerated) with "entities" and
// "relationships" arrays whose records have string fields (and a number
// weight); anything else is an invalid reply, retried. Records are then
// repaired as GraphRAG repairs them rather than failing the unit: a record
// without a name (an end) is dropped, a missing type or description is
// empty, a relationship's end that is not among the entities is added as
// one, and a missing, non-finite or non-positive weight is 1. It returns
// how many records were dropped or repaired.
func parseReply(content string) (Graph, int, error) {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	var r rawReply
	if err := dec.Decode(&r); err != nil {
		return Graph{}, 0, fmt.Errorf("not the JSON object asked for: %w", err)
	}
	if dec.More() {
		return Graph{}, 0, errors.New("text after the JSON object")
	}
	if r.Entities == nil || r.Relationships == nil {
		return Graph{}, 0, errors.New(`the object needs "entities" and "relationships" arrays`)
	}
	var g Graph
	repairs := 0
	names := map[string]bool{}
	str := func(p *string) string {
		if p == nil {
			repairs++
			return ""
		}
		return strings.TrimSpace(*p)
	}
	for _, e := range r.Entities {
		if e.Name == nil || NormalizeName(*e.Name) == "" {
			repairs++
			continue
		}
		g.Entities = append(g.Entities, Entity{Name: strings.TrimSpace(*e.Name), Type: str(e.Type), Description: str(e.Description)})
		names[NormalizeName(*e.Name)] = true
	}
	for _, rel := range r.Relationships {
		if rel.Source == nil || rel.Target == nil || NormalizeName(*rel.Source) == "" || NormalizeName(*rel.Target) == "" {
			repairs++
			continue
		}
		src, dst := strings.TrimSpace(*rel.Source), strings.TrimSpace(*rel.Target)
		for _, end := range []string{src, dst} {
			if !names[NormalizeName(end)] {
				repairs++
				names[NormalizeName(end)] = true
				g.Entities = append(g.Entities, Entity{Name: end})
			}
		}
		w := 1.0
		switch {
		case rel.Weight == nil:
		case math.IsNaN(*rel.Weight) || math.IsInf(*rel.Weight, 0) || *rel.Weight <= 0 || *rel.Weight > math.MaxFloat32:
			repairs++ // the graph stores weights as float32: a larger one would become +Inf
		default:
			w = *rel.Weight
		}
		g.Relationships = append(g.Relationships, Relationship{Source: src, Target: dst, Description: str(rel.Description), Weight: w})
	}
	return g, repairs, nil
}
