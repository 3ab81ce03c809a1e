package v1

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundMessage(t *testing.T) {
	for _, row := range []struct {
		name, in string
		n        int
		want     string
	}{
		{name: "fits", in: "pool gone", n: 9, want: "pool gone"},
		{name: "cut and marked", in: "abcdefghij", n: 8, want: "abcde…"},
		{name: "cut before a rune it would split", in: "ab" + strings.Repeat("é", 4), n: 6, want: "ab…"},
	} {
		t.Run(row.name, func(t *testing.T) {
			got := BoundMessage(row.in, row.n)
			if got != row.want {
				t.Errorf("BoundMessage(%q, %d) = %q, want %q", row.in, row.n, got, row.want)
			}
			if len(got) > row.n || !utf8.ValidString(got) {
				t.Errorf("BoundMessage(%q, %d) = %q: %d bytes, valid UTF-8 %v", row.in, row.n, got, len(got), utf8.ValidString(got))
			}
		})
	}
}
