package v1

import "unicode/utf8"

// BoundMessage cuts a message LINSTOR wrote (a report, a failure) to at most n bytes on
// a rune boundary, marking the cut, so that it fits the status field it goes into.
func BoundMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
