// Package tiktoken counts and cuts text in OpenAI's cl100k_base tokens, the
// unit KET-RAG and GraphRAG size chunks and context budgets in. The BPE
// ranks are embedded in the binary (github.com/pkoukk/tiktoken-go-loader),
// so nothing is downloaded at run time.
package tiktoken

import (
	"strings"
	"sync"

	tk "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Name is the encoding's name.
const Name = "cl100k_base"

// Encoder is the cl100k_base encoding. It is safe for concurrent use.
type Encoder struct{ enc *tk.Tiktoken }

var (
	once    sync.Once
	shared  *Encoder
	loadErr error
)

// CL100K returns the process's cl100k_base encoder, loading the embedded
// ranks on the first call (about 100k merges; later calls are free).
func CL100K() (*Encoder, error) {
	once.Do(func() {
		tk.SetBpeLoader(loader.NewOfflineLoader())
		e, err := tk.GetEncoding(Name)
		if err != nil {
			loadErr = err
			return
		}
		shared = &Encoder{enc: e}
	})
	return shared, loadErr
}

// Encode returns text's token ids. Special-token strings such as
// "<|endoftext|>" are encoded as ordinary text: corpus text is data, never
// control.
func (e *Encoder) Encode(text string) []int { return e.enc.EncodeOrdinary(text) }

// Count is len(Encode(text)).
func (e *Encoder) Count(text string) int { return len(e.enc.EncodeOrdinary(text)) }

// Decode returns the text of ids. A cut through a multi-byte character
// leaves bytes that are not UTF-8; they become U+FFFD, as tiktoken's
// Python decode (errors="replace") does.
func (e *Encoder) Decode(ids []int) string {
	return strings.ToValidUTF8(e.enc.Decode(ids), "\uFFFD")
}

// ByteLen is the number of bytes token id stands for, so callers can map
// token positions back to byte offsets of the encoded text.
func (e *Encoder) ByteLen(id int) int { return len(e.enc.Decode([]int{id})) }
