package gg2

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// LegacyInfo is what a legacy info string says. Its layout is
//
//	[!private!][[map]] name [players/slots][ - mod]
//
// where every bracketed part may be missing. A lobby answering a query
// rebuilds the string from a server's fields, with bots as
// [players+bots/slots] and no mod.
type LegacyInfo struct {
	Private bool
	// HasMap is set when the string names a map, which may be empty ("[]").
	HasMap bool
	Map    []byte
	Name   []byte
	// HasCounts is set when the string carries [players/slots]. Numbers
	// too large for 16 bits read as 65535.
	HasCounts      bool
	Players, Slots uint16
	// Bots is written as [players+bots/slots] when not 0; the reader of a
	// registration never sets it, as servers do not send it.
	Bots uint16
	// HasMod is set when the string ends in " - mod"; OHU is Orpheon's
	// Hosting Utilities, anything else the name of a mod.
	HasMod bool
	Mod    []byte
}

// MaxLegacyInfo is the longest info string: its length is one byte.
const MaxLegacyInfo = math.MaxUint8

const legacyPrivate = "!private!"

// ParseLegacyInfo reads an info string the way the reference lobby's
// pattern does, so every string has a reading:
//
//   - "!private!" at the very start marks a password;
//   - then "[", anything up to the first "]", and that "]" is the map;
//   - leading and trailing whitespace (space, \t, \n, \v, \f, \r) around
//     the name is dropped;
//   - the name is the shortest text after which the rest of the string is
//     whitespace, optionally "[digits/digits]" directly followed by the
//     end or by " - ", optionally " - " and the mod (everything to the
//     end). So "A - B - C" is name "A", mod "B - C", and a name never
//     ends in a valid tail.
//
// The byte slices alias b.
func ParseLegacyInfo(b []byte) LegacyInfo {
	var in LegacyInfo
	s := b
	if after, ok := bytes.CutPrefix(s, []byte(legacyPrivate)); ok {
		in.Private, s = true, after
	}
	if len(s) > 0 && s[0] == '[' {
		if j := bytes.IndexByte(s[1:], ']'); j >= 0 {
			in.HasMap, in.Map, s = true, s[1:1+j:1+j], s[2+j:]
		}
	}
	s = s[leadingSpace(s):]
	for k := 0; ; k++ { // k = len(s) always ends the loop: an empty tail fits
		if in.tail(s[k:]) {
			in.Name = s[:k:k]
			return in
		}
	}
}

// tail reports whether r is a valid ending after the name and, if so,
// records its counts and mod in in.
func (in *LegacyInfo) tail(r []byte) bool {
	w := leadingSpace(r)
	rest := r[w:]
	if len(rest) == 0 {
		return true
	}
	if p, s, n, ok := parseCounts(rest); ok {
		after := rest[n:]
		mod, isMod := bytes.CutPrefix(after, []byte(" - "))
		if len(after) == 0 || isMod {
			in.HasCounts, in.Players, in.Slots = true, p, s
			in.HasMod, in.Mod = isMod, mod
			return true
		}
	}
	// Without counts: whitespace whose last byte is a space, then "- ".
	if w > 0 && r[w-1] == ' ' {
		if mod, ok := bytes.CutPrefix(rest, []byte("- ")); ok {
			in.HasMod, in.Mod = true, mod
			return true
		}
	}
	return false
}

// parseCounts reads "[digits/digits]" at the start of b, saturating each
// number at 65535, and returns the bytes it took.
func parseCounts(b []byte) (players, slots uint16, n int, ok bool) {
	if len(b) == 0 || b[0] != '[' {
		return 0, 0, 0, false
	}
	players, i := digits(b, 1)
	if i == 1 || i >= len(b) || b[i] != '/' {
		return 0, 0, 0, false
	}
	slots, j := digits(b, i+1)
	if j == i+1 || j >= len(b) || b[j] != ']' {
		return 0, 0, 0, false
	}
	return players, slots, j + 1, true
}

// digits reads ASCII digits from b[i:] and returns their value, saturated
// at 65535, and the index after them.
func digits(b []byte, i int) (uint16, int) {
	v := 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		v = min(v*10+int(b[i]-'0'), math.MaxUint16)
	}
	return uint16(v), i
}

// leadingSpace counts the whitespace bytes at the start of b: space, \t,
// \n, \v, \f and \r.
func leadingSpace(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || '\t' <= b[i] && b[i] <= '\r') {
		i++
	}
	return i
}

// Append writes the info string: "!private!" when Private, "[map] " when
// HasMap, the name, " [players/slots]" (" [players+bots/slots]" with bots)
// when HasCounts, " - mod" when HasMod. The result is cut to 255 bytes,
// short of a UTF-8 character the cut would split.
func (in *LegacyInfo) Append(b []byte) []byte {
	start := len(b)
	if in.Private {
		b = append(b, legacyPrivate...)
	}
	if in.HasMap {
		b = append(b, '[')
		b = append(b, in.Map...)
		b = append(b, "] "...)
	}
	b = append(b, in.Name...)
	if in.HasCounts {
		b = append(b, " ["...)
		b = strconv.AppendUint(b, uint64(in.Players), 10)
		if in.Bots != 0 {
			b = append(b, '+')
			b = strconv.AppendUint(b, uint64(in.Bots), 10)
		}
		b = append(b, '/')
		b = strconv.AppendUint(b, uint64(in.Slots), 10)
		b = append(b, ']')
	}
	if in.HasMod {
		b = append(b, " - "...)
		b = append(b, in.Mod...)
	}
	return cutUTF8(b, start+MaxLegacyInfo)
}

// cutUTF8 shortens b to at most n bytes; when the cut falls inside a valid
// UTF-8 character, the whole character goes.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	r := n
	for r > n-utf8.UTFMax && r > 0 && !utf8.RuneStart(b[r]) {
		r--
	}
	if c, size := utf8.DecodeRune(b[r:]); (c != utf8.RuneError || size > 1) && r+size > n {
		return b[:r]
	}
	return b[:n]
}
