package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// loader collects what one Parse call read and refused.
type loader struct {
	name, text string
	raw        map[string]any  // the decoded file
	used       map[string]bool // keys (dotted) whose value was read whole
	tables     map[string]bool // sections
	reported   map[string]bool
	errs       []*Error
}

// section reads the keys of one table. Each getter leaves the default in
// place when the key is absent, and records an error when it is present
// but wrong.
type section struct {
	l    *loader
	name string
	raw  map[string]any
}

func (l *loader) section(name string) *section {
	v, ok := l.raw[name]
	if !ok {
		return nil
	}
	l.tables[name] = true
	m, ok := v.(map[string]any)
	if !ok {
		l.fail([]string{name}, fmt.Sprintf("%s must be a table [%s]", name, name))
		return nil
	}
	return &section{l: l, name: name, raw: m}
}

// refuseUnknown reports every key no section read. Keys inside a value
// that was read (or refused) whole are not reported again.
func (l *loader) refuseUnknown(keys []toml.Key) {
next:
	for _, k := range keys {
		s := k.String()
		if l.used[s] || l.tables[s] {
			continue
		}
		for i := 1; i < len(k); i++ {
			p := k[:i].String()
			if l.used[p] || l.reported[p] {
				continue next
			}
		}
		l.reported[s] = true
		switch {
		case len(k) == 1 && l.isTable(k[0]):
			l.fail(k, fmt.Sprintf("unknown section [%s]", s))
		case len(k) == 1:
			l.fail(k, fmt.Sprintf("%s: unknown key (keys belong in a section such as [lobby])", s))
		default:
			l.fail(k, fmt.Sprintf("[%s] %s: unknown key", k[0], k[1:].String()))
		}
	}
}

func (l *loader) isTable(key string) bool {
	_, ok := l.raw[key].(map[string]any)
	return ok
}

func (l *loader) fail(path []string, msg string) {
	l.errs = append(l.errs, &Error{File: l.name, Line: l.line(path), Msg: msg})
}

// here fails the decoding of the one key line looks for.
type here struct{}

func (here) UnmarshalTOML(any) error { return errors.New("here") }

// line returns the line of the key at path, or 0. The TOML decoder knows
// every key's position but keeps it private; it reports it for a value
// whose decoding fails. So line decodes the text again into a type that
// has only that key, and fails it. This runs only for refused keys.
func (l *loader) line(path []string) int {
	t := reflect.TypeFor[here]()
	for i := len(path) - 1; i >= 0; i-- {
		t = reflect.StructOf([]reflect.StructField{{
			Name: "F", Type: t, Tag: reflect.StructTag(fmt.Sprintf("toml:%q", path[i])),
		}})
	}
	_, err := toml.Decode(l.text, reflect.New(t).Interface())
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return 0
	}
	return pe.Position.Line
}

// get returns the raw value of key and marks it read.
func (s *section) get(key string) (any, bool) {
	v, ok := s.raw[key]
	if ok {
		s.l.used[s.name+"."+quoteKey(key)] = true
	}
	return v, ok
}

// quoteKey spells key as toml.Key.String does, so used keys match the
// decoder's key list.
func quoteKey(key string) string {
	return toml.Key{key}.String()
}

// refuse records that key holds v and why that is wrong.
func (s *section) refuse(key string, v any, why string) {
	s.l.fail([]string{s.name, key}, fmt.Sprintf("[%s] %s %s: %s", s.name, key, show(v), why))
}

// show renders a value as it is written in TOML, for error messages.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = show(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return "{...}"
	}
	return fmt.Sprint(v)
}

// int reads an integer in [min, max].
func (s *section) int(key string, dst *int, min, max int) {
	v, ok := s.get(key)
	if !ok {
		return
	}
	n, isInt := v.(int64)
	switch {
	case !isInt:
		s.refuse(key, v, "want an integer")
	case n < int64(min):
		s.refuse(key, v, fmt.Sprintf("must be at least %d", min))
	case n > int64(max):
		s.refuse(key, v, fmt.Sprintf("must be at most %d", max))
	default:
		*dst = int(n)
	}
}

// rate reads a positive number of events per second (integer or float).
func (s *section) rate(key string, dst *float64) {
	v, ok := s.get(key)
	if !ok {
		return
	}
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		s.refuse(key, v, "want a number")
		return
	}
	if !(f > 0) || math.IsInf(f, 0) {
		s.refuse(key, v, "must be above 0")
		return
	}
	*dst = f
}

// duration reads a Go duration string ("5s", "1m30s") of at least min.
func (s *section) duration(key string, dst *time.Duration, min time.Duration) {
	v, ok := s.get(key)
	if !ok {
		return
	}
	str, isStr := v.(string)
	if !isStr {
		s.refuse(key, v, `want a duration string such as "5s"`)
		return
	}
	d, err := time.ParseDuration(str)
	switch {
	case err != nil:
		s.refuse(key, v, `not a duration (want e.g. "500ms", "5s", "2m")`)
	case d < min:
		s.refuse(key, v, fmt.Sprintf("must be at least %v", min))
	default:
		*dst = d
	}
}

// bool reads true or false.
func (s *section) bool(key string, dst *bool) {
	v, ok := s.get(key)
	if !ok {
		return
	}
	b, isBool := v.(bool)
	if !isBool {
		s.refuse(key, v, "want true or false")
		return
	}
	*dst = b
}

// ip reads an IP address, or "" for none (the zero netip.Addr); with
// only4, IPv6 addresses are refused.
func (s *section) ip(key string, dst *netip.Addr, only4 bool) {
	s.text(key, func(v string) error {
		if v == "" {
			*dst = netip.Addr{}
			return nil
		}
		ip, err := netip.ParseAddr(v)
		switch {
		case err != nil:
			return errors.New("not an IP address")
		case only4 && !ip.Unmap().Is4():
			return errors.New("must be an IPv4 address")
		}
		*dst = ip.Unmap()
		return nil
	})
}

// addrPort reads one "IP:port" address; with only4, IPv6 addresses are
// refused. Host names are refused: a server binds exactly what it is told.
func (s *section) addrPort(key string, dst *netip.AddrPort, only4 bool) {
	s.text(key, func(v string) error {
		ap, err := netip.ParseAddrPort(v)
		switch {
		case err != nil && only4:
			return errors.New(`not IPv4:port, e.g. "0.0.0.0:8900"`)
		case err != nil:
			return errors.New("not IP:port (IPv6 as [::1]:29944)")
		case only4 && !ap.Addr().Unmap().Is4():
			return errors.New("must be an IPv4 address")
		}
		*dst = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		return nil
	})
}

// choice reads a string that must be one of allowed.
func (s *section) choice(key string, dst *string, allowed ...string) {
	v, ok := s.get(key)
	if !ok {
		return
	}
	str, isStr := v.(string)
	for _, a := range allowed {
		if isStr && str == a {
			*dst = str
			return
		}
	}
	s.refuse(key, v, fmt.Sprintf("want one of %s", show(anySlice(allowed))))
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// list reads a string or an array of strings; one string is a list of
// one.
func (s *section) list(key string, dst *[]string) bool {
	v, ok := s.get(key)
	if !ok {
		return false
	}
	switch v := v.(type) {
	case string:
		*dst = []string{v}
		return true
	case []any:
		var out []string // nil for [], which means "none" everywhere
		for _, e := range v {
			str, isStr := e.(string)
			if !isStr {
				s.refuse(key, v, "want strings")
				return false
			}
			out = append(out, str)
		}
		*dst = out
		return true
	}
	s.refuse(key, v, "want a string or an array of strings")
	return false
}

// text reads a string and hands it to parse, which says why it is wrong.
func (s *section) text(key string, parse func(string) error) {
	v, ok := s.get(key)
	if !ok {
		return
	}
	str, isStr := v.(string)
	if !isStr {
		s.refuse(key, v, "want a string")
		return
	}
	if err := parse(str); err != nil {
		s.refuse(key, v, err.Error())
	}
}

// size reads a byte count of at least min: an integer, or a string with a
// unit ("256KiB", "1MiB", "64kB", "512B").
func (s *section) size(key string, dst *int, min int) {
	v, ok := s.get(key)
	if !ok {
		return
	}
	var n int64
	switch v := v.(type) {
	case int64:
		n = v
	case string:
		var err error
		if n, err = parseSize(v); err != nil {
			s.refuse(key, v, err.Error())
			return
		}
	default:
		s.refuse(key, v, `want a size such as "256KiB"`)
		return
	}
	if n < int64(min) || n > math.MaxInt32 {
		s.refuse(key, v, fmt.Sprintf("must be between %d and %d bytes", min, math.MaxInt32))
		return
	}
	*dst = int(n)
}

var units = []struct {
	suffix string
	mult   int64
}{ // longest suffixes first, so "KiB" is not read as "B"
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"kB", 1000}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1}, {"", 1},
}

func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	for _, u := range units {
		num, ok := strings.CutSuffix(v, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/u.mult {
			break
		}
		return n * u.mult, nil
	}
	return 0, errors.New(`not a size (want e.g. "256KiB", "1MiB", "65536")`)
}
