package excerpt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOf(t *testing.T) {
	if got := Of("short", 80); got != "short" {
		t.Errorf("short text changed: %q", got)
	}
	long := strings.Repeat("é", 100) // 200 bytes, two per rune
	got := Of(long, 81)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "… (200 bytes)") || len(got) > 81+len("… (200 bytes)") {
		t.Errorf("Of(200 bytes of é, 81) = %q", got)
	}
}
