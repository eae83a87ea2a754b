// Package transformer is the pair encoder for user-supplied transformer
// cross-encoders: a model folder with tokenizer.json, config.json and
// either model.safetensors (run natively on the engine) or model.onnx (run
// by ONNX Runtime). Latents are the first-token last hidden states; the
// head comes from the model's classification weights.
package transformer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/internal/safefile"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/bert"
	"github.com/gleaner-rag/gleaner/models/ort"
	"github.com/gleaner-rag/gleaner/models/safetensors"
	"github.com/gleaner-rag/gleaner/models/tokenize"
)

// Runtimes.
const (
	Native = "native"
	ORT    = "ort"
)

// Texts gives node texts to tokenize (once per node).
type Texts func(node int32) string

// Encoder is a models.PairEncoder over a transformer cross-encoder. It is
// safe for concurrent use.
type Encoder struct {
	tok     *tokenize.Tokenizer
	cfg     bert.Config
	native  *bert.Model
	session *ort.Session
	maxLen  int
	texts   Texts
	mu      sync.RWMutex
	nodeIDs map[int32][]int32
	tokHash string                   // sha256 of tokenizer.json
	stored  func(node int32) []int32 // node ids tokenized at index time, if they match
}

// UseStoredTokens makes the encoder read node token ids from get (an
// index's pre-tokenized texts) instead of tokenizing nodes, provided they
// were made by this model's tokenizer (hash as index.TokenizerHash). It
// reports whether they were.
func (e *Encoder) UseStoredTokens(hash string, get func(node int32) []int32) bool {
	if hash == "" || hash != e.tokHash {
		return false
	}
	e.stored = get
	return true
}

// Load opens the model folder with the given runtime ("" picks native
// when model.safetensors exists, else ort) and returns the encoder and its
// head.
func Load(dir, runtime string, b engine.Backend, texts Texts, maxLen int) (*Encoder, *models.Head, error) {
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, nil, err
	}
	cfg, err := bert.LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, err
	}
	if maxLen <= 0 {
		maxLen = min(512, cfg.MaxPositions-cfg.PadTokenID-2)
	}
	e := &Encoder{tok: tok, cfg: cfg, maxLen: maxLen, texts: texts, nodeIDs: map[int32][]int32{}}
	if e.tokHash, err = fileHash(filepath.Join(dir, "tokenizer.json")); err != nil {
		return nil, nil, err
	}
	runtime, err = pickRuntime(dir, runtime)
	if err != nil {
		return nil, nil, err
	}
	head, err := e.open(dir, runtime, b)
	if err != nil {
		return nil, nil, err
	}
	if head == nil {
		return nil, nil, fmt.Errorf("transformer: %s has no classification head (classifier weights); is it a cross-encoder?", dir)
	}
	return e, head, nil
}

func pickRuntime(dir, runtime string) (string, error) {
	_, errST := os.Stat(filepath.Join(dir, "model.safetensors"))
	_, errOX := os.Stat(filepath.Join(dir, "model.onnx"))
	switch {
	case runtime == "" && errST == nil:
		return Native, nil
	case runtime == "" && errOX == nil:
		return ORT, nil
	case runtime == Native && errST != nil && errOX != nil:
		return "", fmt.Errorf("transformer: the native runtime needs %s/model.safetensors or model.onnx", dir)
	case runtime == ORT && errOX != nil:
		return "", fmt.Errorf("transformer: the ort runtime needs %s/model.onnx", dir)
	case runtime != Native && runtime != ORT && runtime != "":
		return "", fmt.Errorf("transformer: unknown runtime %q (native or ort)", runtime)
	case runtime == "":
		return "", fmt.Errorf("transformer: %s has neither model.safetensors nor model.onnx", dir)
	}
	return runtime, nil
}

// open loads the weights for the runtime; the head always comes from the
// safetensors weights when present, else from the ONNX initializers.
func (e *Encoder) open(dir, runtime string, b engine.Backend) (*models.Head, error) {
	var head *models.Head
	if t, err := safetensors.Read(filepath.Join(dir, "model.safetensors")); err == nil {
		m, err := bert.New(e.cfg, t, b)
		if err != nil {
			return nil, err
		}
		head = m.Head
		if runtime == Native {
			e.native = m
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if runtime == Native && e.native == nil { // no safetensors: the ONNX initializers
		m, err := bert.LoadONNX(filepath.Join(dir, "model.onnx"), e.cfg, b)
		if err != nil {
			return nil, err
		}
		e.native, head = m, m.Head
	}
	if runtime == ORT {
		s, err := ort.Open(filepath.Join(dir, "model.onnx"), "last_hidden_state")
		if err != nil {
			return nil, err
		}
		e.session = s
		if head == nil {
			h, err := bert.HeadFromONNX(filepath.Join(dir, "model.onnx"), e.cfg)
			if err != nil {
				return nil, err
			}
			head = h
		}
	}
	return head, nil
}

// Close releases an ONNX Runtime session.
// SetPrecision sets what the native runtime's GEMMs may use (before the
// encoder is used); ONNX Runtime computes in float32 only.
func (e *Encoder) SetPrecision(p engine.Precision) error {
	switch {
	case p > engine.PrecisionBF16:
		return fmt.Errorf("transformer: unknown precision %d", p)
	case e.native != nil:
		e.native.Precision = p
	case p != engine.PrecisionF32:
		return fmt.Errorf("transformer: precision %s needs the native runtime (ONNX Runtime computes in fp32)", p)
	}
	return nil
}

func (e *Encoder) Close() error {
	if e.native != nil {
		e.native.Close()
	}
	if e.session != nil {
		return e.session.Close()
	}
	return nil
}

// Name implements models.PairEncoder.
func (e *Encoder) Name() string { return "transformer" }

// Dim implements models.PairEncoder.
func (e *Encoder) Dim() int { return e.cfg.Hidden }

type prepared struct {
	text string
	ids  []int32
}

func (p *prepared) Query() string { return p.text }

// Prepare tokenizes the query once.
func (e *Encoder) Prepare(_ context.Context, query string) (models.Prepared, error) {
	ids, err := e.tok.IDs(query)
	if err != nil {
		return nil, err
	}
	return &prepared{text: query, ids: ids}, nil
}

// node returns a node's token ids, tokenizing it on first use only.
func (e *Encoder) node(n int32) ([]int32, error) {
	if e.stored != nil {
		return e.stored(n), nil
	}
	e.mu.RLock()
	ids, ok := e.nodeIDs[n]
	e.mu.RUnlock()
	if ok {
		return ids, nil
	}
	ids, err := e.tok.IDs(e.texts(n))
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.nodeIDs[n] = ids
	e.mu.Unlock()
	return ids, nil
}

// Encode implements models.PairEncoder: one forward pass over the padded
// batch of (query, node) pairs, first-token hidden states out.
func (e *Encoder) Encode(ctx context.Context, p models.Prepared, nodes []int32, out []float32) error {
	q, ok := p.(*prepared)
	if !ok {
		return fmt.Errorf("transformer: query prepared by another encoder (%T)", p)
	}
	var batch bert.Batch
	for _, n := range nodes {
		d, err := e.node(n)
		if err != nil {
			return err
		}
		ids, types := e.tok.Pair(q.ids, d, e.maxLen)
		batch.IDs, batch.Types = append(batch.IDs, ids), append(batch.Types, types)
	}
	var hidden []float32
	var seq int
	var err error
	if e.native != nil {
		hidden, seq, err = e.native.Forward(ctx, batch)
	} else {
		var outs [][]float32
		outs, seq, err = e.session.Run(batch.IDs, batch.Types, e.tok.Pad())
		if err == nil {
			hidden = outs[0]
		}
	}
	if err != nil {
		return err
	}
	copy(out, bert.FirstToken(hidden, len(nodes), seq, e.cfg.Hidden))
	return nil
}

var _ models.PairEncoder = (*Encoder)(nil)

// fileHash is the hex sha256 of a file (index.TokenizerHash's definition).
func fileHash(path string) (string, error) {
	b, err := safefile.Read(path, safefile.MaxTokenizer)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}
