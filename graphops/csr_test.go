package graphops

import (
	"reflect"
	"testing"
)

func TestBuildBothDirections(t *testing.T) {
	es := []Edge{{Src: 2, Dst: 0, W: 1, Rel: 1}, {Src: 0, Dst: 2, W: 2}, {Src: 0, Dst: 1, W: 3}, {Src: 0, Dst: 1, W: 4, Rel: 0}}
	g, err := Build(4, es, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Out.Neighbors(0); !reflect.DeepEqual(got, []int32{1, 1, 2}) {
		t.Errorf("out(0) = %v", got)
	}
	if got := g.In.Neighbors(0); !reflect.DeepEqual(got, []int32{2}) {
		t.Errorf("in(0) = %v", got)
	}
	if g.TotalDegree(0) != 4 || g.TotalDegree(3) != 0 || g.Out.Degree(1) != 0 || g.In.Degree(1) != 2 {
		t.Errorf("degrees: %d %d %d %d", g.TotalDegree(0), g.TotalDegree(3), g.Out.Degree(1), g.In.Degree(1))
	}
	for _, c := range []*CSR{&g.Out, &g.In} {
		if err := c.Validate(4); err != nil {
			t.Error(err)
		}
	}
	if _, err := Build(2, []Edge{{Src: 0, Dst: 5}}, false); err == nil {
		t.Error("edge outside the vertex range accepted")
	}
}
