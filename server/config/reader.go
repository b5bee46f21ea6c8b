package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// A section is the keys of one table, each a toml.Primitive, read one by
// one in apply: the decoder stops at the first value it cannot decode, so
// typed fields would report one bad value per section, and a raw key
// still knows its line for the checks between values. Decoding a section
// into its struct marks its keys known, so MetaData.Undecoded lists the
// unknown ones.
type section interface {
	apply(r *reader, c *Config)
}

// reader collects what one Parse call refused or doubted.
type reader struct {
	name, text  string
	md          toml.MetaData
	errs, warns []*Error
	hidden      map[string]bool // keys (dotted) whose own keys are not reported
	root        *toml.MetaData  // the file decoded again to locate unknown keys
	roots       map[string]toml.Primitive
}

// table decodes the section raw into keys, or refuses it if it is not a
// table.
func (r *reader) table(raw toml.Primitive, keys section) bool {
	if r.md.PrimitiveDecode(raw, keys) == nil {
		return true
	}
	line, key := where(&r.md, raw)
	r.hidden[key] = true
	r.errs = append(r.errs, &Error{r.name, line, fmt.Sprintf("%s must be a table [%s]", key, key)})
	return false
}

// get reads the key raw with v; a refusal names the key and its line.
func (r *reader) get(raw toml.Primitive, v value) { r.judge(&r.errs, raw, v) }

func (r *reader) judge(list *[]*Error, raw toml.Primitive, v value) {
	var pe toml.ParseError
	if errors.As(r.md.PrimitiveDecode(raw, v), &pe) {
		r.hidden[pe.LastKey] = true // a table given as a value has no unknown keys
		section, key, _ := strings.Cut(pe.LastKey, ".")
		*list = append(*list, &Error{r.name, pe.Position.Line, fmt.Sprintf("[%s] %s %s", section, key, pe.Message)})
	}
}

// where returns the line and dotted name of the key raw, or 0 and "" for
// a key the file does not set. The decoder knows each key's position but
// tells it only in the error of a value that fails, so raw is decoded into
// one that always fails.
func where(md *toml.MetaData, raw toml.Primitive) (line int, key string) {
	var pe toml.ParseError
	errors.As(md.PrimitiveDecode(raw, value(func(any) error { return errors.New("here") })), &pe)
	return pe.Position.Line, pe.LastKey
}

// refuse reports why at the last written of keys (where the contradiction
// appears when the file is read from the top), so why must read well
// after any of them; warn does the same as a warning.
func (r *reader) refuse(why string, keys ...toml.Primitive) { r.flag(&r.errs, why, keys) }
func (r *reader) warn(why string, keys ...toml.Primitive)   { r.flag(&r.warns, why, keys) }

func (r *reader) flag(list *[]*Error, why string, keys []toml.Primitive) {
	var at toml.Primitive
	last := 0
	for _, k := range keys {
		if line := r.line(k); line > last {
			at, last = k, line
		}
	}
	if last == 0 { // only defaults involved
		*list = append(*list, &Error{File: r.name, Msg: why})
		return
	}
	r.judge(list, at, func(any) error { return errors.New(why) })
}

// given reports whether the file sets key of section.
func (r *reader) given(section, key string) bool { return r.md.IsDefined(section, key) }

// line returns the line of the key raw, or 0.
func (r *reader) line(raw toml.Primitive) int {
	line, _ := where(&r.md, raw)
	return line
}

// unknown reports every key no section knows, in file order, but not the
// keys inside one already reported or refused.
func (r *reader) unknown() {
next:
	for _, k := range r.md.Undecoded() {
		for i := 1; i < len(k); i++ {
			if r.hidden[k[:i].String()] {
				continue next
			}
		}
		r.hidden[k.String()] = true
		msg := fmt.Sprintf("[%s] %s: unknown key", k[0], k[1:])
		switch {
		case len(k) == 1 && r.md.Type(k[0]) == "Hash":
			msg = fmt.Sprintf("unknown section [%s]", k)
			if s := nearest(k[0], sectionNames()); s != "" {
				msg += fmt.Sprintf(" (did you mean [%s]?)", s)
			}
		case len(k) == 1:
			msg = fmt.Sprintf("%s: unknown key (keys belong in a section such as [lobby])", k)
			if s := sectionOf(k[0]); s != "" {
				msg = fmt.Sprintf("%s: unknown key (did you mean %s in [%s]?)", k, k[0], s)
			}
		case len(k) == 2:
			msg += suggest(k[0], k[1])
		}
		r.errs = append(r.errs, &Error{r.name, r.locate(k), msg})
	}
}

// locate returns the line of a key no section holds, or 0: the file is
// decoded once more, into nested tables of raw keys, where k is found.
func (r *reader) locate(k toml.Key) int {
	if r.root == nil {
		md, _ := toml.Decode(r.text, &r.roots)
		r.root = &md
	}
	tables := r.roots
	for _, name := range k[:len(k)-1] {
		next := map[string]toml.Primitive{}
		if r.root.PrimitiveDecode(tables[name], &next) != nil {
			return 0
		}
		tables = next
	}
	line, _ := where(r.root, tables[k[len(k)-1]])
	return line
}
