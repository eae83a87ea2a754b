package corpus

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// byteTokens makes every byte one token, so hand cases count characters.
type byteTokens struct{}

func (byteTokens) Encode(s string) []int {
	ids := make([]int, len(s))
	for i := range len(s) {
		ids[i] = int(s[i])
	}
	return ids
}
func (byteTokens) Decode(ids []int) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}
func (byteTokens) ByteLen(int) int { return 1 }

func TestChunkRangesGraphRAGLoop(t *testing.T) {
	cases := []struct {
		n, size, overlap int
		want             [][2]int
	}{
		{25, 10, 3, [][2]int{{0, 10}, {7, 17}, {14, 24}, {21, 25}}},
		{10, 10, 3, [][2]int{{0, 10}, {7, 10}}}, // GraphRAG's last chunk inside the overlap
		{9, 10, 3, [][2]int{{0, 9}, {7, 9}}},
		{7, 10, 3, [][2]int{{0, 7}}},
		{0, 10, 3, nil},
		{5, 2, 0, [][2]int{{0, 2}, {2, 4}, {4, 5}}},
	}
	for _, c := range cases {
		if got := chunkRanges(c.n, c.size, c.overlap); !reflect.DeepEqual(got, c.want) {
			t.Errorf("chunkRanges(%d, %d, %d) = %v, want %v", c.n, c.size, c.overlap, got, c.want)
		}
	}
	if got := pieceRanges([2]int{7, 17}, 4); !reflect.DeepEqual(got, [][2]int{{7, 11}, {11, 15}, {15, 17}}) {
		t.Errorf("pieceRanges = %v", got)
	}
}

func TestChunkByTokensDocumentsAndProvenance(t *testing.T) {
	c := &Corpus{
		Nodes: []Node{
			{ID: "a", Text: "abcdefghij"}, // 10 bytes
			{ID: "b", Text: "klmno"},
			{ID: "c", Title: "T", Text: "xyz"},
		},
		Queries: []Query{{ID: "q", Text: "?", Gold: []string{"b"}, Grades: map[string]int{"b": 2}, Answers: []string{"klm"}}},
	}
	o := TokenChunkOptions{Size: 8, Overlap: 2, Split: 8, Documents: DocumentPerNode}
	out, infos, err := ChunkByTokens(c, byteTokens{}, o)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, n := range out.Nodes {
		texts = append(texts, n.Text)
	}
	// a: [0,8) [6,10); b: [0,5); c: "T\nxyz" [0,5)
	if want := []string{"abcdefgh", "ghij", "klmno", "T\nxyz"}; !slices.Equal(texts, want) {
		t.Fatalf("per node: %q, want %q", texts, want)
	}
	if infos[1].Chunk != 1 || infos[1].TokenStart != 6 || infos[1].TokenEnd != 10 || !slices.Equal(infos[1].Nodes, []string{"a"}) {
		t.Fatalf("provenance of piece 1: %+v", infos[1])
	}
	if q := out.Queries[0]; !slices.Equal(q.Gold, []string{"2"}) || q.Grades["2"] != 2 || q.Answers[0] != "klm" {
		t.Fatalf("gold not mapped to the piece holding b: %+v", q)
	}

	o.Documents = DocumentCorpus // "abcdefghij\nklmno\nT\nxyz" = 22 bytes
	out, infos, err = ChunkByTokens(c, byteTokens{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if out.Nodes[1].Text != "ghij\nklm" || !slices.Equal(infos[1].Nodes, []string{"a", "b"}) {
		t.Fatalf("corpus document: piece 1 = %q from %v", out.Nodes[1].Text, infos[1].Nodes)
	}
	if got := out.Queries[0].Gold; !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("gold b lies in pieces 1 and 2, got %v", got)
	}

	o.Split = 3
	out, infos, _ = ChunkByTokens(c, byteTokens{}, o)
	if out.Nodes[0].Text != "abc" || out.Nodes[2].Text != "gh" || infos[2].Piece != 2 || infos[3].Chunk != 1 {
		t.Fatalf("split pieces: %+v %+v", out.Nodes[:3], infos[:4])
	}
}

func TestChunkByTokensTitlesAndBlankPieces(t *testing.T) {
	c := &Corpus{Nodes: []Node{
		{ID: "a", Title: "X", Text: "one"}, {ID: "b", Title: "X", Text: "two"}, {ID: "c", Title: "Y", Text: "  \n  "},
	}}
	out, infos, err := ChunkByTokens(c, byteTokens{}, TokenChunkOptions{Size: 100, Overlap: 0, Split: 100, Documents: DocumentPerTitle})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Nodes) != 2 || out.Nodes[0].Text != "X\none\nX\ntwo" || infos[0].Document != "a" {
		t.Fatalf("title grouping: %+v", out.Nodes)
	}
	if !strings.HasPrefix(out.Nodes[1].Text, "Y") {
		t.Fatalf("the title-only piece keeps its title: %q", out.Nodes[1].Text)
	}
}

func TestTokenChunkOptionsValidate(t *testing.T) {
	for _, o := range []TokenChunkOptions{
		{Size: 0, Split: 1, Documents: "node"},
		{Size: 10, Overlap: 10, Split: 1, Documents: "node"},
		{Size: 10, Overlap: -1, Split: 1, Documents: "node"},
		{Size: 10, Split: 0, Documents: "node"},
		{Size: 10, Split: 5, Documents: "file"},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := DefaultTokenChunkOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ChunkByTokens(&Corpus{Nodes: []Node{{ID: "a", Text: " "}}}, byteTokens{}, DefaultTokenChunkOptions()); err == nil {
		t.Fatal("a corpus of blank text chunked to nothing without an error")
	}
}

// Huge sizes cut one piece per chunk; no offset arithmetic overflows.
func TestChunkRangesHugeSizes(t *testing.T) {
	const huge = int(^uint(0) >> 1)
	if got := chunkRanges(10, huge, huge-1); !reflect.DeepEqual(got[0], [2]int{0, 10}) || got[len(got)-1] != [2]int{9, 10} {
		t.Fatalf("chunkRanges: %v", got)
	}
	if got := pieceRanges([2]int{7, 17}, huge); !reflect.DeepEqual(got, [][2]int{{7, 17}}) {
		t.Fatalf("pieceRanges: %v", got)
	}
}
