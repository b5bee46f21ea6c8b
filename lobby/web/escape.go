package web

import (
	"strings"
	"unicode/utf8"
)

// appendText writes s as HTML text or as a quoted attribute value: &, <,
// >, " and ' as character references, invalid UTF-8 and control
// characters (other than tab, newline and carriage return) as U+FFFD.
func appendText(b []byte, s string) []byte {
	start := 0 // of the run of bytes that need nothing
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && !needsEscape[c] || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		size := 1
		switch {
		case c >= utf8.RuneSelf:
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || r < 0xa0 { // invalid, or a C1 control
				b = append(b, "\uFFFD"...)
			} else {
				b = append(b, s[i:i+size]...)
			}
		case needsEscape[c]:
			b = append(b, escapes[c]...)
		default: // a control character
			b = append(b, "\uFFFD"...)
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}

var (
	needsEscape = [128]bool{'&': true, '<': true, '>': true, '"': true, '\'': true}
	escapes     = [128]string{'&': "&amp;", '<': "&lt;", '>': "&gt;", '"': "&#34;", '\'': "&#39;"}
)

// maxURL bounds a link's length.
const maxURL = 2048

// safeURL reports whether u may become a link: an http or https URL of
// valid UTF-8 with no whitespace or control characters, of bounded length.
// Anything else (javascript:, data:, a relative path) is no link at all.
func safeURL(u string) bool {
	rest, ok := cutPrefixFold(u, "https://")
	if !ok {
		rest, ok = cutPrefixFold(u, "http://")
	}
	if !ok || rest == "" || len(u) > maxURL || !utf8.ValidString(u) {
		return false
	}
	for _, r := range u {
		if r <= ' ' || r >= 0x7f && r < 0xa0 {
			return false
		}
	}
	return true
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}
