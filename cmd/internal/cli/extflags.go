package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// The flags of the lobby's extension (package ext): what describes a room,
// filters, passwords. A command given any of them speaks the extension;
// without them it speaks the seed messages, as before.

// listFlag is a flag given as often as wanted.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// metaFlags are create's: what describes the new room.
type metaFlags struct {
	name, mode, mapName string
	tags                listFlag
	private             bool
	passwordFile        string
}

func (c *Command) metaFlags() *metaFlags {
	f := &metaFlags{}
	c.Flags.StringVar(&f.name, "name", "", "the room's `name` in listings (32 bytes at most)")
	c.Flags.StringVar(&f.mode, "mode", "", "the room's game `mode` (16 bytes at most)")
	c.Flags.StringVar(&f.mapName, "map", "", "the room's `map` (32 bytes at most)")
	c.Flags.Var(&f.tags, "tag", "a `key=value` tag of the room; up to 4, keys of a-z 0-9 _ - .")
	c.Flags.BoolVar(&f.private, "private", false, "list the room nowhere: players join it by its code")
	c.Flags.StringVar(&f.passwordFile, "password-file", "", "ask every player for the password in this `file` (its first line)")
	return f
}

// used reports whether any of the flags was given.
func (f *metaFlags) used() bool {
	return f.name != "" || f.mode != "" || f.mapName != "" || len(f.tags) > 0 || f.private || f.passwordFile != ""
}

// options checks the flags and makes them a CREATE's options.
func (f *metaFlags) options() (client.CreateOptions, error) {
	o := client.CreateOptions{Meta: ext.Meta{Name: f.name, Mode: f.mode, Map: f.mapName}, Private: f.private}
	var err error
	if o.Meta.Tags, err = parseTags(f.tags); err != nil {
		return o, err
	}
	if !o.Meta.Valid() {
		return o, fmt.Errorf("--name, --mode, --map and --tag must be printable text of at most %d, %d, %d and %d bytes",
			ext.MaxName, ext.MaxMode, ext.MaxMap, ext.MaxTagValue)
	}
	o.Password, err = readPassword(f.passwordFile)
	return o, err
}

// parseTags parses key=value tags.
func parseTags(kvs []string) ([]ext.Tag, error) {
	var tags []ext.Tag
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !ext.ValidTagKey(k) || !ext.ValidText(v, ext.MaxTagValue) {
			return nil, fmt.Errorf("tag %q is not key=value (a key of 1-%d of a-z 0-9 _ - ., a value of at most %d bytes)", kv, ext.MaxTagKey, ext.MaxTagValue)
		}
		tags = append(tags, ext.Tag{Key: k, Value: v})
	}
	if len(tags) > ext.MaxTags {
		return nil, fmt.Errorf("%d tags: a room has %d at most", len(tags), ext.MaxTags)
	}
	return tags, nil
}

// readPassword reads the first line of file; "" for no file.
func readPassword(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--password-file: %v", err)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" || !ext.ValidText(pw, ext.MaxPassword) {
		return "", fmt.Errorf("--password-file %s: its first line must be a password of 1-%d printable bytes", file, ext.MaxPassword)
	}
	return pw, nil
}

// filterHelp says what --filter takes.
const filterHelp = "a `key=value` the rooms must match, as often as wanted or comma-separated: " +
	"mode, map, name (a prefix), state (waiting, countdown, playing, finished; '|' between several), free (places), " +
	"or any other key for a tag"

// parseFilter parses --filter values.
func parseFilter(exprs []string) (ext.Filter, error) {
	var f ext.Filter
	for _, expr := range exprs {
		for _, kv := range strings.Split(expr, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return f, fmt.Errorf("filter %q is not key=value", kv)
			}
			switch k {
			case "mode":
				f.Mode = v
			case "map":
				f.Map = v
			case "name":
				f.NamePrefix = v
			case "free":
				n, err := strconv.ParseUint(v, 10, 8)
				if err != nil {
					return f, fmt.Errorf("filter free=%q is not a number of places (0-255)", v)
				}
				f.MinFree = uint8(n)
			case "state":
				for _, name := range strings.Split(v, "|") {
					s := stateNamed(name)
					if s > packet.Finished {
						return f, fmt.Errorf("filter state=%q: no state %q (waiting, countdown, playing, finished)", v, name)
					}
					f.States |= 1 << s
				}
			default:
				tags, err := parseTags([]string{kv})
				if err != nil {
					return f, err
				}
				f.Tags = append(f.Tags, tags...)
			}
		}
	}
	if !f.Valid() {
		return f, fmt.Errorf("filter %q: a text too long, a tag twice, or more than %d tags", strings.Join(exprs, ","), ext.MaxTags)
	}
	return f, nil
}
