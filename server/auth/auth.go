// Package auth holds gleaner serve's API keys: a keys file of salted
// hashes, each key with its scopes, the indexes it may use, its ACL groups
// and its rate limit, and the check of a presented token against it.
//
// A token is "glk_<id>_<secret>": the id names the key in the file (so a
// check costs one hash, not one per key) and the secret, 32 random bytes
// in hex, is stored only as SHA-256 over a per-key salt and the secret.
// Tokens carry 256 bits of entropy, so a fast salted hash is enough (a
// slow password hash would add milliseconds to every request and protect
// nothing a random 256-bit secret does not). The comparison is constant
// time, and an unknown id costs the same hash as a known one.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Scope is what a key may do.
type Scope string

// The scopes.
const (
	Read  Scope = "read"  // retrieve, list indexes and methods
	Write Scope = "write" // change documents (the write endpoints)
	Admin Scope = "admin" // reload, metrics, profiling
)

// Scopes lists every scope.
func Scopes() []Scope { return []Scope{Read, Write, Admin} }

// AllIndexes, in Key.Indexes, lets a key use every index.
const AllIndexes = "*"

// TokenPrefix starts every token, so a leaked one is easy to recognise
// (secret scanners) and a key file's hash is never mistaken for it.
const TokenPrefix = "glk_"

// Key is one API key as the keys file holds it.
type Key struct {
	// ID names the key (letters, digits, '-', '_', '.'; at most 64 bytes);
	// logs and the audit log name keys by it.
	ID string `json:"id"`
	// Hash is "sha256:<salt hex>:<digest hex>", the digest being SHA-256
	// over the salt's bytes and the secret's text.
	Hash string `json:"hash"`
	// Scopes are what the key may do.
	Scopes []Scope `json:"scopes"`
	// Indexes are the index names the key may use ("*": every index).
	Indexes []string `json:"indexes"`
	// Groups are the key's ACL groups.
	Groups []string `json:"groups,omitempty"`
	// Rate is the requests per second the key may make (0: no limit), with
	// bursts of up to Burst (0: max(1, Rate)).
	Rate  float64 `json:"rate,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// Note is free text for the operator (who holds the key, why).
	Note string `json:"note,omitempty"`
}

// Has reports whether the key has scope sc.
func (k *Key) Has(sc Scope) bool { return slices.Contains(k.Scopes, sc) }

// MayUse reports whether the key may use the index named name.
func (k *Key) MayUse(name string) bool {
	return slices.Contains(k.Indexes, AllIndexes) || slices.Contains(k.Indexes, name)
}

// BurstOrDefault is the key's burst: Burst, or max(1, Rate) when unset.
func (k *Key) BurstOrDefault() int {
	if k.Burst > 0 {
		return k.Burst
	}
	return max(1, int(k.Rate))
}

// check validates one key of a file.
func (k *Key) check() error {
	switch {
	case !validID(k.ID):
		return &FieldError{Field: "id", Msg: fmt.Sprintf("%q: use 1 to 64 letters, digits, '-', '_' and '.'", clip(k.ID))}
	case len(k.Scopes) == 0:
		return &FieldError{Field: "scopes", Msg: fmt.Sprintf("none; give one or more of %v", Scopes())}
	case len(k.Indexes) == 0:
		return &FieldError{Field: "indexes", Msg: `none; list the index names the key may use, or "*" for all`}
	case k.Rate != 0 && !(k.Rate >= 1e-3 && k.Rate <= 1e6):
		return &FieldError{Field: "rate", Msg: fmt.Sprintf("%v: want 0 (no limit), or 0.001 (one per 1,000 s) to 1e6 requests per second", k.Rate)}
	case k.Burst < 0 || k.Burst > 1e6:
		return &FieldError{Field: "burst", Msg: fmt.Sprintf("%d: want 0 to 1000000", k.Burst)}
	}
	if _, _, err := parseHash(k.Hash); err != nil {
		return &FieldError{Field: "hash", Msg: err.Error()}
	}
	for _, sc := range k.Scopes {
		if !slices.Contains(Scopes(), sc) {
			return &FieldError{Field: "scopes", Msg: fmt.Sprintf("unknown scope %q; want %v", clip(string(sc)), Scopes())}
		}
	}
	for _, name := range k.Indexes {
		if name != AllIndexes && !validID(name) {
			return &FieldError{Field: "indexes", Msg: fmt.Sprintf("%q is not an index name", clip(name))}
		}
	}
	for _, g := range k.Groups {
		if g == "" || len(g) > 256 {
			return &FieldError{Field: "groups", Msg: "a group name is 1 to 256 bytes"}
		}
	}
	return nil
}

// FieldError names the field of a key that is wrong.
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// secretBytes is a secret's length before hex: 256 bits.
const secretBytes = 32

// NewToken makes a key's token and the hash the keys file stores for it.
func NewToken(id string) (token, hash string, err error) {
	if !validID(id) {
		return "", "", &FieldError{Field: "id", Msg: fmt.Sprintf("%q: use 1 to 64 letters, digits, '-', '_' and '.'", clip(id))}
	}
	var secret [secretBytes]byte
	var salt [16]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", "", err
	}
	if _, err := rand.Read(salt[:]); err != nil {
		return "", "", err
	}
	s := hex.EncodeToString(secret[:])
	return TokenPrefix + id + "_" + s, "sha256:" + hex.EncodeToString(salt[:]) + ":" + hex.EncodeToString(digest(salt[:], s)), nil
}

func digest(salt []byte, secret string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(secret))
	return h.Sum(nil)
}

// parseHash splits a stored hash into its salt and digest.
func parseHash(s string) (salt, sum []byte, err error) {
	alg, rest, ok := strings.Cut(s, ":")
	if !ok || alg != "sha256" {
		return nil, nil, errors.New(`want "sha256:<salt hex>:<digest hex>" (gleaner keys add writes it)`)
	}
	saltHex, sumHex, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, nil, errors.New(`want "sha256:<salt hex>:<digest hex>"`)
	}
	if salt, err = hex.DecodeString(saltHex); err != nil || len(salt) < 8 {
		return nil, nil, errors.New("the salt is not 8 or more bytes of hex")
	}
	if sum, err = hex.DecodeString(sumHex); err != nil || len(sum) != sha256.Size {
		return nil, nil, errors.New("the digest is not 32 bytes of hex")
	}
	return salt, sum, nil
}

// splitToken splits "glk_<id>_<secret>"; the secret is hex, so the id is
// everything before the last '_'.
func splitToken(tok string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(tok, TokenPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 || len(rest)-i-1 != 2*secretBytes {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// dummy is hashed for a token whose id is unknown, so that answer takes as
// long as a wrong secret for a known id.
var dummy = struct{ salt, sum []byte }{make([]byte, 16), make([]byte, sha256.Size)}

// Authenticate returns the key a token belongs to, or nil.
func (r *Keyring) Authenticate(token string) *Key {
	if r == nil || len(token) > 512 {
		return nil
	}
	id, secret, ok := splitToken(token)
	e, known := r.keys[id]
	salt, sum := dummy.salt, dummy.sum
	if known {
		salt, sum = e.salt, e.sum
	}
	if !ok {
		secret = ""
	}
	match := subtle.ConstantTimeCompare(digest(salt, secret), sum) == 1
	if !ok || !known || !match {
		return nil
	}
	return e.key
}
