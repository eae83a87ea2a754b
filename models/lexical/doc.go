// Package lexical holds gleaner's embedded, model-free text models: the
// analyzer, BM25 (Lucene variant) and LSA vectors (TF-IDF followed by a
// seeded randomized truncated SVD).
//
// # Analyzer
//
// The analyzer mirrors Lucene's EnglishAnalyzer as Anserini uses it, so BM25
// numbers are comparable with published Anserini runs:
//
//  1. Unicode-aware tokenization: a token is a maximal run of letters, marks
//     and digits; an apostrophe between letters stays inside the token
//     ("don't"), a '.' or ',' between digits stays inside a number ("3.5");
//     every other rune separates tokens. Han, Hiragana and Katakana runes are
//     each a token of their own, as in Lucene's StandardTokenizer.
//  2. English possessive removal: a trailing "'s" is dropped.
//  3. Lowercasing (Unicode simple case folding via unicode.ToLower).
//  4. Stopword removal with Lucene's 33-word English list.
//  5. Porter stemming (Porter 1980, as Lucene's PorterStemFilter), applied to
//     tokens of letters only.
package lexical
