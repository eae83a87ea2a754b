package seeder

import (
	"context"
	"fmt"
	"math"
)

// AttentionShare is where one layer's attention goes, averaged over the
// gold answer rows and the heads: the shares of the weight on incoming KG
// edges, expander edges and the virtual node (they sum to 1), and on KG
// edges whose relation the question's text side ranks first at some hop
// (0 without the text side).
type AttentionShare struct {
	KG, Expander, Virtual float64
	TopRelation           float64
	// UniformKG is the KG edges' share of the incoming edges: what KG
	// would be if attention were uniform.
	UniformKG float64
}

// AttentionShares runs the model over exs and reports, per layer, where the
// gold rows' attention goes: the diagnosis of what the encoder reads
// (docs/methods.md §3.5).
func (m *Model) AttentionShares(ctx context.Context, exs []Example) ([]AttentionShare, error) {
	c := m.Config
	out := make([]AttentionShare, c.Layers)
	rows := 0
	for _, ex := range exs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := newBatch[float32](c, []*Graph{ex.G})
		if err != nil {
			return nil, err
		}
		t := forward(m.W, c, b, 0, nil)
		top := topRelationRows(ex.G)
		for _, i := range ex.T.Gold {
			for l := range t.layers {
				s := attentionShare(b, c, &t.layers[l], i, top)
				out[l].KG += s.KG
				out[l].Expander += s.Expander
				out[l].Virtual += s.Virtual
				out[l].TopRelation += s.TopRelation
				out[l].UniformKG += s.UniformKG
			}
			rows++
		}
	}
	if rows == 0 {
		return nil, fmt.Errorf("seeder: no gold row among %d examples' candidates", len(exs))
	}
	for l := range out {
		out[l].KG /= float64(rows)
		out[l].Expander /= float64(rows)
		out[l].Virtual /= float64(rows)
		out[l].TopRelation /= float64(rows)
		out[l].UniformKG /= float64(rows)
	}
	return out, nil
}

// topRelationRows marks the relation rows whose per-hop probability is the
// largest of the graph's rows at some hop (nil without path inputs).
func topRelationRows(g *Graph) []bool {
	if len(g.Rels) == 0 || len(g.Rels[0].Path) == 0 {
		return nil
	}
	top := make([]bool, len(g.Rels))
	for h := range g.Rels[0].Path {
		best := 0
		for r := range g.Rels {
			if g.Rels[r].Path[h] > g.Rels[best].Path[h] {
				best = r
			}
		}
		top[best] = true
	}
	return top
}

// attentionShare is row i's attention in one layer, by edge class,
// averaged over the heads.
func attentionShare[F Float](b *batch[F], c Config, lt *layerTape[F], i int, top []bool) AttentionShare {
	d := c.Hidden
	hd := d / c.Heads
	scale := 1 / math.Sqrt(float64(hd))
	var s AttentionShare
	if in := b.ptr[i+1] - b.ptr[i]; in > 0 {
		kg := 0
		for p := b.ptr[i]; p < b.ptr[i+1]; p++ {
			if int(b.erow[p]) < b.nRel {
				kg++
			}
		}
		s.UniformKG = float64(kg) / float64(in)
	}
	for h := 0; h < c.Heads; h++ {
		lo, hi := h*hd, (h+1)*hd
		var z, kg, exp, vn, tr float64
		for p := b.ptr[i]; p < b.ptr[i+1]; p++ {
			w, _ := edgeWeight(lt.q[i*d+lo:i*d+hi], lt.k[int(b.src[p])*d+lo:], lt.etab[int(b.erow[p])*d+lo:], scale)
			z += w
			switch row := int(b.erow[p]); {
			case row < b.nRel:
				kg += w
				if top != nil && top[row] {
					tr += w
				}
			case row == b.nRel+rowExp:
				exp += w
			default:
				vn += w
			}
		}
		if z > 0 {
			s.KG += kg / z / float64(c.Heads)
			s.Expander += exp / z / float64(c.Heads)
			s.Virtual += vn / z / float64(c.Heads)
			s.TopRelation += tr / z / float64(c.Heads)
		}
	}
	return s
}
