package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"regexp"
)

// The manifest checksums itself: its "checksum" field holds the CRC-32C of
// the file's exact bytes with that field's hex digits set to zeros. Every
// other byte of the manifest (metadata such as BM25's k1 and b, the
// embedder's name, each file's size and checksum) is covered, so a flipped
// bit anywhere in it is detected.
const checksumPlaceholder = "crc32c:00000000"

var checksumField = regexp.MustCompile(`"checksum": "crc32c:([0-9a-f]{8})"`)

// sealManifest encodes m with its own checksum.
func sealManifest(m Manifest) ([]byte, error) {
	m.Checksum = checksumPlaceholder
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	sum := fmt.Sprintf("crc32c:%08x", crc32.Checksum(b, castagnoli))
	return bytes.Replace(b, []byte(`"checksum": "`+checksumPlaceholder+`"`), []byte(`"checksum": "`+sum+`"`), 1), nil
}

// verifyManifest checks b's own checksum.
func verifyManifest(b []byte) error {
	loc := checksumField.FindAllSubmatchIndex(b, -1)
	if len(loc) != 1 {
		return fmt.Errorf("no single checksum field (written by gleaner before format version 2, or damaged)")
	}
	zeroed := bytes.Clone(b)
	copy(zeroed[loc[0][2]:loc[0][3]], "00000000")
	want := string(b[loc[0][2]:loc[0][3]])
	if got := fmt.Sprintf("%08x", crc32.Checksum(zeroed, castagnoli)); got != want {
		return fmt.Errorf("checksum %s, the manifest says %s (it was changed or damaged)", got, want)
	}
	return nil
}
