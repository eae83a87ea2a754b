// Package excerpt shortens user-supplied text that an error repeats, so a
// request's megabyte value never comes back in full.
package excerpt

import (
	"fmt"
	"unicode/utf8"
)

// Of returns s, or its first max bytes (cut on a rune boundary) followed by
// "… (N bytes)".
func Of(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

// InvalidUTF8At is the offset of b's first byte that is not valid UTF-8
// (len(b) when all of it is), for errors that say where.
func InvalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
