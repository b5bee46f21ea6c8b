package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// knownKeys is every section's keys by section name, read from the
// struct tags of file and keys, which name them for the decoder.
var knownKeys = func() map[string][]string {
	out := map[string][]string{}
	ft, kt := reflect.TypeFor[file](), reflect.TypeFor[keys]()
	for i := range ft.NumField() {
		section := ft.Field(i).Tag.Get("toml")
		f, ok := kt.FieldByName(ft.Field(i).Name)
		if !ok {
			continue
		}
		for j := range f.Type.NumField() {
			if name := f.Type.Field(j).Tag.Get("toml"); name != "" {
				out[section] = append(out[section], name)
			}
		}
	}
	return out
}()

// sectionNames returns the sections, sorted.
func sectionNames() []string {
	var out []string
	for s := range knownKeys {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// sectionOf returns the section that has key, if exactly one does.
func sectionOf(key string) string {
	found := ""
	for _, s := range sectionNames() {
		if slices.Contains(knownKeys[s], key) {
			if found != "" {
				return ""
			}
			found = s
		}
	}
	return found
}

// suggest is what an unknown key of section may have meant, as the end
// of its message: " (did you mean max_players?)" for the nearest key of
// the section, or " (did you mean [supervisor] empty_timeout?)" for a key
// of another section; "" when nothing is near.
func suggest(section, key string) string {
	if s := nearest(key, knownKeys[section]); s != "" {
		return fmt.Sprintf(" (did you mean %s?)", s)
	}
	if s := sectionOf(key); s != "" && s != section {
		return fmt.Sprintf(" (did you mean [%s] %s?)", s, key)
	}
	return ""
}

// nearest returns the one of names closest to word, if it is close: at
// most a third of its letters apart (two at least), as a typo is.
func nearest(word string, names []string) string {
	best, bestD := "", max(2, len(word)/3)+1
	for _, n := range names {
		if d := distance(strings.ToLower(word), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the edit distance between a and b (insertions, deletions,
// substitutions and swaps of neighbours, one each), over bytes: keys are
// ASCII. Words are short and few, so the quadratic table is cheap.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
