package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A value reads one key's raw TOML value (string, int64, float64, bool,
// []any, map[string]any or a date) into its place in a Config, or says
// why it cannot. It is a toml.Unmarshaler, so the decoder hands it the raw
// value and returns its refusal as a toml.ParseError at the key's line.
type value func(raw any) error

// UnmarshalTOML reads raw; nil is an absent key, which keeps the default.
func (v value) UnmarshalTOML(raw any) error {
	if raw == nil {
		return nil
	}
	if err := v(raw); err != nil {
		return fmt.Errorf("%s: %w", show(raw), err)
	}
	return nil
}

// show renders a value as it is written in TOML, for error messages.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
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

// as reads a raw value of type T with read, and refuses any other type
// as not what was wanted.
func as[T any](want string, read func(T) error) value {
	return func(raw any) error {
		v, ok := raw.(T)
		if !ok {
			return errors.New("want " + want)
		}
		return read(v)
	}
}

// text reads a string with read.
func text(read func(string) error) value { return as("a string", read) }

func boolean(dst *bool) value {
	return as("true or false", func(b bool) error { *dst = b; return nil })
}

// count reads an integer in [lo, hi].
func count[T int | int64](dst *T, lo, hi T) value {
	return as("an integer", func(n int64) error {
		switch {
		case n < int64(lo):
			return fmt.Errorf("must be at least %d", lo)
		case n > int64(hi):
			return fmt.Errorf("must be at most %d", hi)
		}
		*dst = T(n)
		return nil
	})
}

// readers reads "auto" (as many as the process may run threads at once,
// runtime.GOMAXPROCS: the cores it may use) or a count of 1-1024.
func readers(dst *int) value {
	return func(raw any) error {
		if raw == "auto" {
			*dst = runtime.GOMAXPROCS(0)
			return nil
		}
		if _, ok := raw.(int64); !ok {
			return errors.New(`want "auto" or an integer`)
		}
		return count(dst, 1, 1024)(raw)
	}
}

// number is a TOML number as a float64, whether written as an integer or
// a float.
func number(raw any) (float64, bool) {
	if n, isInt := raw.(int64); isInt {
		return float64(n), true
	}
	f, isFloat := raw.(float64)
	return f, isFloat
}

// rate reads a positive number of events per second (integer or float).
func rate(dst *float64) value {
	return func(raw any) error {
		f, isFloat := number(raw)
		switch {
		case !isFloat:
			return errors.New("want a number")
		case !(f > 0) || math.IsInf(f, 0):
			return errors.New("must be above 0")
		}
		*dst = f
		return nil
	}
}

// oneOf reads a string that must be one of allowed.
func oneOf(dst *string, allowed ...string) value {
	return func(raw any) error {
		s, ok := raw.(string)
		if !ok || !slices.Contains(allowed, s) {
			quoted := make([]string, len(allowed))
			for i, a := range allowed {
				quoted[i] = strconv.Quote(a)
			}
			return fmt.Errorf("want one of [%s]", strings.Join(quoted, ", "))
		}
		*dst = s
		return nil
	}
}

// duration reads a Go duration string ("5s", "1m30s") of at least lo.
func duration(dst *time.Duration, lo time.Duration) value {
	return as(`a duration string such as "5s"`, func(s string) error {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return errors.New(`not a duration (want e.g. "500ms", "5s", "2m")`)
		case d < lo:
			return fmt.Errorf("must be at least %v", lo)
		}
		*dst = d
		return nil
	})
}

// size reads a byte count of at least lo: an integer, or a string with a
// unit ("256KiB", "1MiB", "64kB", "512B").
func size(dst *int, lo int) value {
	return bytesIn(func(n int64) error {
		if n < int64(lo) || n > math.MaxInt32 {
			return fmt.Errorf("must be between %d and %d bytes", lo, math.MaxInt32)
		}
		*dst = int(n)
		return nil
	})
}

// bytesIn reads a byte count, an integer or a string with a unit, and
// hands it to set, which says why it is wrong.
func bytesIn(set func(int64) error) value {
	return func(raw any) error {
		n, ok := raw.(int64)
		if s, isStr := raw.(string); isStr {
			var err error
			if n, err = parseSize(s); err != nil {
				return err
			}
		} else if !ok {
			return errors.New(`want a size such as "256KiB"`)
		}
		return set(n)
	}
}

// unlimitedOr reads "" as no limit, which leaves the zero value in
// place, and anything else with v.
func unlimitedOr(v value) value {
	return func(raw any) error {
		if s, ok := raw.(string); ok && s == "" {
			return nil
		}
		if err := v(raw); err != nil {
			return fmt.Errorf(`%w, or "" for no limit`, err)
		}
		return nil
	}
}

// memory reads a byte count of at least lo, as size does, without its
// upper bound.
func memory(dst *int64, lo int64) value {
	return bytesIn(func(n int64) error {
		if n < lo {
			return fmt.Errorf("must be at least %d bytes (%d MiB)", lo, lo>>20)
		}
		*dst = n
		return nil
	})
}

// share reads a number (integer or float) in [lo, hi].
func share(dst *float64, lo, hi float64) value {
	return func(raw any) error {
		f, isFloat := number(raw)
		switch {
		case !isFloat:
			return errors.New("want a number such as 0.5")
		case !(f >= lo) || f > hi:
			return fmt.Errorf("must be between %v and %v", lo, hi)
		}
		*dst = f
		return nil
	}
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

// ip reads an IP address, or "" for none (the zero netip.Addr); with
// only4, IPv6 addresses are refused. An address listed to clients cannot
// be 0.0.0.0 or ::, which would send them nowhere.
func ip(dst *netip.Addr, only4, listed bool) value {
	return text(func(s string) error {
		a, err := netip.ParseAddr(s)
		switch {
		case s == "":
		case err != nil:
			return errors.New("not an IP address")
		case only4 && !a.Unmap().Is4():
			return errors.New("must be an IPv4 address")
		case listed && a.IsUnspecified():
			return errors.New("clients cannot reach an unspecified address (empty: the address each query arrived on)")
		}
		*dst = a.Unmap()
		return nil
	})
}

// addrPort reads one "IP:port" address; with only4, IPv6 addresses are
// refused. Host names are refused: a server binds exactly what it is told.
func addrPort(dst *netip.AddrPort, only4 bool) value {
	return text(func(s string) error {
		ap, err := netip.ParseAddrPort(s)
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

// addrPortOrOff reads one "IP:port" address, or "" for off (the zero
// AddrPort).
func addrPortOrOff(dst *netip.AddrPort) value {
	return text(func(v string) error {
		if v == "" {
			*dst = netip.AddrPort{}
			return nil
		}
		ap, err := netip.ParseAddrPort(v)
		if err != nil {
			return errors.New(`not IP:port (IPv6 as [::1]:29942), or "" for off`)
		}
		*dst = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		return nil
	})
}

// listen reads the lobby's UDP addresses: one string or an array of them,
// at least one.
func listen(dst *[]netip.AddrPort) value {
	return func(raw any) error {
		if s, ok := raw.(string); ok {
			raw = []any{s}
		}
		ss, err := strs(raw, "a string or an array of strings")
		if err != nil {
			return err
		}
		if len(ss) == 0 {
			return errors.New("want at least one address")
		}
		out := make([]netip.AddrPort, len(ss))
		for i, s := range ss {
			if out[i], err = netip.ParseAddrPort(s); err != nil {
				return fmt.Errorf("%q is not IP:port (IPv6 as [::1]:7777)", s)
			}
		}
		*dst = out
		return nil
	}
}

// networks reads an array of addresses and networks ("203.0.113.7",
// "198.51.100.0/24", "2001:db8::/32"); an address is a network of one.
func networks(dst *[]netip.Prefix) value {
	return func(raw any) error {
		ss, err := strs(raw, `an array of addresses and networks, e.g. ["203.0.113.7", "198.51.100.0/24"]`)
		if err != nil {
			return err
		}
		var out []netip.Prefix // nil for [], as the default
		for _, s := range ss {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return fmt.Errorf("%q is neither an address nor a network such as 198.51.100.0/24", s)
				}
				p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
			}
			out = append(out, p.Masked())
		}
		*dst = out
		return nil
	}
}

// command reads an argument vector: an array of strings whose first, the
// program, is not empty. A single string is refused rather than taken as
// the program, since "server --port {port}" would be run as one name.
func command(dst *[]string) value {
	return func(raw any) error {
		argv, err := strs(raw, `an array of strings, e.g. ["/usr/games/server", "{port}"]`)
		switch {
		case err != nil:
			return err
		case len(argv) > 0 && argv[0] == "":
			return errors.New("the program (the first string) is empty")
		}
		*dst = argv
		return nil
	}
}

// strs reads an array of strings; [] is nil, which means "none" everywhere.
func strs(raw any, want string) ([]string, error) {
	a, ok := raw.([]any)
	if !ok {
		return nil, errors.New("want " + want)
	}
	var out []string
	for _, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, errors.New("want strings")
		}
		out = append(out, s)
	}
	return out, nil
}

// parsePorts parses "FIRST-LAST" (inclusive) or a single port.
func parsePorts(v string) (first, last uint16, err error) {
	a, b, isRange := strings.Cut(v, "-")
	if !isRange {
		b = a
	}
	if first, err = parsePort(a, `want "FIRST-LAST", e.g. "30000-30999"`); err == nil {
		last, err = parsePort(b, `want "FIRST-LAST", e.g. "30000-30999"`)
	}
	if err == nil && first > last {
		err = errors.New("first port above last")
	}
	return first, last, err
}

// parsePort parses a port in 1-65535, refusing what is not a number with
// want.
func parsePort(s, want string) (uint16, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, errors.New(want)
	case n < 1 || n > 65535:
		return 0, fmt.Errorf("port %d outside 1-65535", n)
	}
	return uint16(n), nil
}

// hostPort checks "host:port" with a host name or IP; the name is resolved
// when announcing starts.
func hostPort(v string) error {
	const want = `want "host:port", e.g. "lobby.example.org:29944"`
	host, port, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		return errors.New(want)
	}
	_, err = parsePort(port, want)
	return err
}
