package eval

import (
	"strings"
	"unicode"
)

// AnswerRecall is the share of questions whose gold answer occurs in the
// retrieved text: answer_recall@k is 1 for a question when a normalised gold
// answer (or alias) occurs, on word boundaries, in the normalised title and
// text of one of the top k retrieved nodes.
const AnswerRecall = "answer_recall"

// ContextAnswerRecall is the share of questions whose gold answer occurs
// in the method's LLM context of B tokens (context_answer_recall@B), and
// ContextTokens the context's mean size (context_tokens@B).
const (
	ContextAnswerRecall = "context_answer_recall"
	ContextTokens       = "context_tokens"
)

// NormalizeAnswer is SQuAD's answer normalisation: lower case, ASCII
// punctuation removed, the articles "a", "an" and "the" removed, runs of
// white space collapsed to one space.
func NormalizeAnswer(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r) {
			return -1
		}
		return r
	}, s)
	words := strings.Fields(s)
	out := words[:0]
	for _, w := range words {
		if w != "a" && w != "an" && w != "the" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// containsAnswer reports whether the normalised answer occurs in the
// normalised text on word boundaries ("1912" is not found in "19123").
func containsAnswer(normText, normAnswer string) bool {
	if normAnswer == "" {
		return false
	}
	return strings.Contains(" "+normText+" ", " "+normAnswer+" ")
}

// ScoreAnswers computes answer_recall at each cut-off for one question:
// texts are the retrieved nodes' title and text, best first.
func ScoreAnswers(texts []string, answers []string, cutoffs []int) map[string]float64 {
	var norm []string
	for _, a := range answers {
		if n := NormalizeAnswer(a); n != "" {
			norm = append(norm, n)
		}
	}
	first := -1 // rank (0-based) of the first node holding an answer
	for i, t := range texts {
		nt := NormalizeAnswer(t)
		for _, a := range norm {
			if containsAnswer(nt, a) {
				first = i
				break
			}
		}
		if first >= 0 {
			break
		}
	}
	out := make(map[string]float64, len(cutoffs))
	for _, k := range cutoffs {
		out[Name(AnswerRecall, k)] = b2f(first >= 0 && first < k)
	}
	return out
}
