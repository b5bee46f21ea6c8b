package packet

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// documented is one row of docs/protocol.md's golden packets.
type documented struct {
	name string // the row's first cell, e.g. "JOIN_ROOM room 1, seq 2"
	hex  string // as written, spaces included
}

// documentedGoldens returns the rows between the document's
// `<!-- golden packets -->` and `<!-- end golden packets -->` markers.
func documentedGoldens(t *testing.T, doc []byte) []documented {
	t.Helper()
	_, rest, ok := bytes.Cut(doc, []byte("\n<!-- golden packets -->\n"))
	if !ok {
		t.Fatal("docs/protocol.md has no <!-- golden packets --> marker")
	}
	table, _, ok := bytes.Cut(rest, []byte("\n<!-- end golden packets -->"))
	if !ok {
		t.Fatal("docs/protocol.md has no <!-- end golden packets --> marker")
	}
	row := regexp.MustCompile("^\\| ([^|`]+) \\| `([0-9a-f ]+)` \\|$")
	var rows []documented
	for i, line := range strings.Split(string(table), "\n") {
		if i < 2 { // the head and its rule
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("docs/protocol.md: golden packet row %q is not | name | `hex` |", line)
		}
		rows = append(rows, documented{name: m[1], hex: m[2]})
	}
	return rows
}

// TestDocumentedGoldens keeps docs/protocol.md's golden packets equal to
// the codec's: every one decodes, encodes back to the same bytes and is
// named for what it is; the document and golden hold the same packets;
// and every message type the document lists has one in each framing.
func TestDocumentedGoldens(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := documentedGoldens(t, doc)
	known := map[string]bool{}
	for _, g := range golden {
		known[strings.Join(strings.Fields(g.hex), "")] = true
	}
	shown := map[string]bool{}
	covered := map[Framing]map[Type]bool{Compact: {}, Legacy: {}}
	seq := regexp.MustCompile(`\bseq (\d+)\b`)
	for _, r := range rows {
		b := wiretest.Hex(t, r.hex)
		m, err := Parse(b)
		if err != nil {
			t.Errorf("%s: Parse: %v", r.name, err)
			continue
		}
		if again, err := m.Append(nil); err != nil || !bytes.Equal(again, b) {
			t.Errorf("%s: encodes back to %x (%v), want %x", r.name, again, err, b)
		}
		want := m.Type.String()
		if m.Framing == Legacy {
			want = "legacy " + want
		}
		if r.name != want && !strings.HasPrefix(r.name, want+" ") && !strings.HasPrefix(r.name, want+",") {
			t.Errorf("%q is a %s", r.name, want)
		}
		if s := seq.FindStringSubmatch(r.name); s == nil || s[1] != strconv.Itoa(int(m.Seq)) {
			t.Errorf("%q has sequenceId %d", r.name, m.Seq)
		}
		h := strings.Join(strings.Fields(r.hex), "")
		if !known[h] {
			t.Errorf("%s: the document shows %s, which is no golden packet of the codec", r.name, r.hex)
		}
		shown[h] = true
		covered[m.Framing][m.Type] = true
	}
	for _, g := range golden {
		if !shown[strings.Join(strings.Fields(g.hex), "")] {
			t.Errorf("the codec's golden %s (%s) is not in the document", g.name, g.hex)
		}
	}
	// The extension's messages (package ext) have their own section and
	// test; the seed's are those listed before it.
	seed, _, _ := bytes.Cut(doc, []byte("\n## The extension"))
	types := regexp.MustCompile("(?m)^\\| `0x([0-9a-f]{2})` \\| ([A-Z_]+) \\|").FindAllSubmatch(seed, -1)
	if len(types) == 0 {
		t.Fatal("docs/protocol.md lists no message types")
	}
	for _, m := range types {
		v, _ := strconv.ParseUint(string(m[1]), 16, 8)
		typ := Type(v)
		if typ.String() != string(m[2]) {
			t.Errorf("the document names 0x%s %s, the codec %s", m[1], m[2], typ)
		}
		for _, f := range []Framing{Compact, Legacy} {
			if !covered[f][typ] {
				t.Errorf("no golden packet of %s in the %s framing in the document", m[2], f)
			}
		}
	}
}
