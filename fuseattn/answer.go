package fuseattn

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/models/llama"
)

// Answer modes.
const (
	ModeFuseRAG = "fuserag" // anchors S_q in the prompt, the evidence as latent memory
	ModeText    = "text"    // plain RAG: the same evidence passages as prompt text
)

// Answerer runs FuseRAG's stage 3 (and the plain-RAG control): it builds
// the prompt and, in fuserag mode, the memory, then decodes. It is safe for
// concurrent use (each answer has its own session and memory).
type Answerer struct {
	Decoder *llama.Model
	Tok     llama.Tokenizer
	Fuser   *Fuser // nil: text mode only
	Anchors AnchorOptions
}

// Evidence is what stage 1 retrieved for a question: the nodes B_q with
// their passages, G_q over them (local ids = positions), and the query
// vector z_q in the evidence encoder's space (fuserag mode).
type Evidence struct {
	Nodes    []int32
	Passages []Passage
	Graph    *graphops.Subgraph
	Zq       []float32
}

// AnswerOptions configure one answer.
type AnswerOptions struct {
	Mode     string
	Generate llama.GenerateOptions
}

// AnswerResult is an answer with what went into it and its timings.
type AnswerResult struct {
	Text    string
	Prompt  string
	Anchors *AnchorSet // fuserag mode
	Memory  MemoryStats
	Gen     llama.Stats
	Build   time.Duration // anchors (fuserag) or passages (text) into a prompt
	TTFT    time.Duration // from the evidence to the first token: prompt, memory, prefill, first token
}

// Answer decodes an answer to question from ev, passing text to emit as it
// is produced (whole UTF-8 characters); emit returning false stops.
func (a *Answerer) Answer(ctx context.Context, question string, ev *Evidence, o AnswerOptions, emit func(string) bool) (*AnswerResult, error) {
	if err := a.check(ev, o); err != nil {
		return nil, err
	}
	start := time.Now()
	res := &AnswerResult{}
	var err error
	var mem *Memory
	if o.Mode == ModeFuseRAG {
		if res.Anchors, err = Anchors(question, ev.Passages, a.Anchors, a.Tok); err != nil {
			return nil, err
		}
		res.Prompt = prompt(res.Anchors.Text, question)
		res.Build = time.Since(start)
		if mem, res.Memory, err = a.Fuser.Build(ctx, ev.Nodes, func(v int32) string { return passageOf(ev, v) }, ev.Graph, ev.Zq); err != nil {
			return nil, err
		}
		defer mem.Free()
	} else {
		res.Prompt = prompt(passagesText(ev.Passages), question)
		res.Build = time.Since(start)
	}
	ids, err := a.promptIDs(res.Prompt)
	if err != nil {
		return nil, err
	}
	if limit := a.Decoder.Cfg.MaxPositions; o.Generate.MaxTokens > limit-len(ids) { // no overflow for a huge MaxTokens
		return nil, fmt.Errorf("fuseattn: a %s prompt of %d tokens plus %d new ones exceeds the decoder's %d positions (max_position_embeddings): retrieve fewer passages or generate fewer tokens",
			o.Mode, len(ids), o.Generate.MaxTokens, limit)
	}
	var kv *llama.Memory
	if mem != nil {
		kv = mem.KV
	}
	s, err := a.Decoder.NewSession(len(ids)+o.Generate.MaxTokens, kv)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []int32
	sent, stopped := 0, false
	genStart := time.Now()
	res.Gen, err = s.Generate(ctx, ids, o.Generate, func(id int32) bool {
		out = append(out, id)
		text := a.Tok.Decode(out)
		if len(text) <= sent {
			return true
		}
		n := completePrefix(text[sent:])
		if n == 0 {
			return true // a character split over tokens: wait for the next one
		}
		piece := text[sent : sent+n]
		sent += n
		if !emit(validText(piece)) {
			stopped = true
			return false
		}
		return true
	})
	if res.Gen.FirstToken > 0 { // also when the first token is a stop token
		res.TTFT = genStart.Sub(start) + res.Gen.FirstToken
	}
	text := a.Tok.Decode(out)
	if len(text) > sent && !stopped { // what is held back, also after an error or a cancel
		emit(validText(text[sent:]))
	}
	res.Text = validText(text)
	return res, err
}

// validText replaces every invalid byte by U+FFFD, one each, so that the
// pieces of a stream add up to the whole text.
func validText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // an invalid byte ranges as one RuneError
		b.WriteRune(r)
	}
	return b.String()
}

// completePrefix is how much of piece can be written now: all of it but a
// trailing incomplete UTF-8 sequence or a trailing U+FFFD (which a
// tokenizer writes for one), at most one token's worth held back; invalid
// bytes elsewhere are written (as U+FFFD), never waited on.
func completePrefix(piece string) int {
	n := len(piece)
	if strings.HasSuffix(piece, "\uFFFD") {
		n -= len("\uFFFD")
	}
	for k := 1; k <= utf8.UTFMax-1 && k <= n; k++ {
		if utf8.RuneStart(piece[n-k]) {
			if !utf8.FullRuneInString(piece[n-k : n]) {
				n -= k
			}
			break
		}
	}
	return n
}

func (a *Answerer) check(ev *Evidence, o AnswerOptions) error {
	switch {
	case a.Decoder == nil || a.Tok == nil:
		return fmt.Errorf("fuseattn: answering needs a decoder and its tokenizer")
	case o.Mode != ModeFuseRAG && o.Mode != ModeText:
		return fmt.Errorf("fuseattn: answer mode %q: want %q or %q", o.Mode, ModeFuseRAG, ModeText)
	case o.Mode == ModeFuseRAG && a.Fuser == nil:
		return fmt.Errorf("fuseattn: fuserag mode needs adapters (a Fuser)")
	case ev == nil || len(ev.Nodes) == 0 || len(ev.Passages) != len(ev.Nodes):
		return fmt.Errorf("fuseattn: no evidence (or passages not matching its nodes)")
	}
	if o.Mode == ModeFuseRAG {
		if err := a.Fuser.CheckDecoder(a.Decoder.Cfg); err != nil {
			return err
		}
		if err := a.Anchors.Validate(); err != nil {
			return err
		}
	}
	return o.Generate.Validate()
}

// promptIDs tokenizes the prompt after the model's BOS token, if it has one.
func (a *Answerer) promptIDs(p string) ([]int32, error) {
	ids, err := a.Tok.Encode(p)
	if err != nil {
		return nil, err
	}
	if bos := a.Decoder.Cfg.BOSTokenID; bos != nil {
		ids = append([]int32{int32(*bos)}, ids...)
	}
	return ids, nil
}

func passageOf(ev *Evidence, v int32) string {
	for i, n := range ev.Nodes {
		if n == v {
			p := ev.Passages[i]
			return strings.TrimSpace(p.Title + "\n" + p.Text)
		}
	}
	return ""
}

// passagesText is plain RAG's context: each passage as "Title: text".
func passagesText(ps []Passage) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("\n")
		}
		if p.Title != "" {
			b.WriteString(p.Title + ": ")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// prompt is the decoder's input: the context, then the question.
func prompt(context, question string) string {
	return "Context:\n" + context + "\n\nQuestion: " + question + "\nAnswer:"
}
