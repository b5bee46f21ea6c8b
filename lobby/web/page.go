package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/lobby/internal/frontend"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// pageKind is one of the two pages.
type pageKind uint8

const (
	htmlPage pageKind = iota
	jsonPage
)

// knownLobbies are the lobby names the reference lobby shows, in its
// order; others are shown by id.
var knownLobbies = []struct {
	id   gg2.UUID
	name string
}{
	{gg2.GG2LobbyUUID, "Gang Garrison Lobby"},
	{gg2.MustParseUUID("0e29560e-443a-93a3-e15e-7bd072df7506"), "PyGG2 Testing Lobby"},
	{gg2.MustParseUUID("4fd0319b-5868-4f24-8b77-568cbb18fde9"), "Vanguard Lobby"},
}

// lobbyName is how the page names lobby id: Foyer's own lobby by the
// page's title, a known lobby by its name.
func (s *Server) lobbyName(id gg2.UUID) string {
	if id == s.cfg.Lobby {
		return s.cfg.Title
	}
	for _, l := range knownLobbies {
		if l.id == id {
			return l.name
		}
	}
	return "unknown lobby " + id.String()
}

// lobbyRank orders the tables: Foyer's own lobby first, then the known
// lobbies in the reference lobby's order, then the others by id.
func (s *Server) lobbyRank(id gg2.UUID) int {
	if id == s.cfg.Lobby {
		return 0
	}
	for i, l := range knownLobbies {
		if l.id == id {
			return 1 + i
		}
	}
	return 1 + len(knownLobbies)
}

// row is one listed server.
type row struct {
	listed      bool
	own         bool   // one of Foyer's own rooms
	enc         []byte // the row as the page being made writes it
	lobby       gg2.UUID
	id          uint32
	password    bool
	name, mapID string
	players     int
	bots        int
	slots       int
	game        string
	gameVersion string
	gameURL     string // http or https only, else empty
	addr        netip.AddrPort
}

// pageCache keeps the last pages made: browsers ask far more often than
// the table changes. A page stays valid while the room table's version and
// the describer's generation are those it was made from; a few are kept,
// for each kind and host.
type pageCache struct {
	mu      sync.Mutex
	entries [4]cachedPage
	next    int
}

type cachedPage struct {
	kind         pageKind
	host         netip.Addr
	version, gen uint64
	b            []byte
}

// page returns the page of kind with Foyer's own rooms at host. The bytes
// are shared and must not be modified.
func (s *Server) page(kind pageKind, host netip.Addr) []byte {
	snap := s.rooms.List()
	var gen uint64
	if s.describer != nil {
		gen = s.describer.Generation()
	}
	c := &s.pages
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.b != nil && e.kind == kind && e.host == host && e.version == snap.Version && e.gen == gen {
			return e.b
		}
	}
	var b []byte
	rows, cut := s.fit(kind, s.rows(snap, host))
	if cut > 0 {
		s.drops.Counter("page_cut").Add(uint64(cut))
	}
	if kind == htmlPage {
		// A row of a typical server takes some 250 bytes.
		b = s.appendHTML(make([]byte, 0, len(htmlHead)+len(htmlTail)+256*len(rows)+1024), rows, cut)
	} else {
		b = s.appendJSON(rows, cut)
	}
	c.entries[c.next] = cachedPage{kind: kind, host: host, version: snap.Version, gen: gen, b: b}
	c.next = (c.next + 1) % len(c.entries)
	return b
}

// lobbyCost is what a lobby's heading and table frame take on a page, at
// most: the size of a page's rows is counted with them.
const lobbyCost = len(htmlTableHead) + len(htmlTableTail) + 200

// fit returns the rows a page of kind carries within MaxPageBytes, grouped
// by lobby, each with its encoding in kind, and how many were left out.
// Foyer's own rooms come first, then the registered servers with their
// networks taking turns, so that one network's many servers cannot push
// the others off the page.
func (s *Server) fit(kind pageKind, rows []row) ([]row, int) {
	var own, registered []int
	for i := range rows {
		if rows[i].own {
			own = append(own, i)
		} else {
			registered = append(registered, i)
		}
	}
	registered = frontend.Interleave(registered, func(i int) netip.Prefix { return limit.PrefixOf(rows[i].addr.Addr()) })
	budget, cut := s.cfg.MaxPageBytes, 0
	lobbies := make(map[gg2.UUID]bool)
	var kept []int
	// Every row's encoding in one buffer (a row keeps its slice of it
	// when the buffer grows), so that a page of thousands of rows costs a
	// few allocations.
	buf := bytes.NewBuffer(make([]byte, 0, 256*len(rows)))
	enc := json.NewEncoder(buf)
	for _, i := range append(own, registered...) {
		r := &rows[i]
		start := buf.Len()
		if kind == htmlPage {
			buf.Write(appendRow(buf.AvailableBuffer(), *r))
			r.enc = buf.Bytes()[start:]
		} else {
			if err := enc.Encode(jsonRow(*r)); err != nil { // strings, numbers and bools always encode
				panic(err)
			}
			r.enc = bytes.TrimSuffix(buf.Bytes()[start:], []byte("\n")) // Encode ends each value with one
		}
		n := len(r.enc) + 1
		if !lobbies[r.lobby] {
			n += lobbyCost
		}
		if n > budget {
			cut++
			continue
		}
		budget -= n
		lobbies[r.lobby] = true
		kept = append(kept, i)
	}
	slices.SortFunc(kept, func(a, b int) int {
		ra, rb := &rows[a], &rows[b]
		if c := cmp.Compare(s.lobbyRank(ra.lobby), s.lobbyRank(rb.lobby)); c != 0 {
			return c
		}
		if c := slices.Compare(ra.lobby[:], rb.lobby[:]); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // room order
	})
	out := make([]row, len(kept))
	for k, i := range kept {
		out[k] = rows[i]
	}
	return out, cut
}

// rows lists snap's rooms that a page shows, in room order: every one but
// the private ones, which are joined by code and listed nowhere.
func (s *Server) rows(snap room.Snapshot, host netip.Addr) []row {
	rows := make([]row, 0, len(snap.Rooms))
	for _, r := range snap.Rooms {
		if r.Private {
			continue
		}
		rows = append(rows, row{})
		rw := &rows[len(rows)-1]
		rw.id, rw.password, rw.name, rw.mapID, rw.game = r.ID, r.Password, r.Name, r.Map, r.Game
		rw.players, rw.slots = r.Occupied(), r.MaxPlayers
		rw.addr = netip.AddrPortFrom(r.Host.Unmap(), r.Port)
		if r.Source.Own() {
			kv := frontend.RoomKeys(r, s.cfg.Game)
			rw.listed, rw.own, rw.lobby, rw.addr = true, true, s.cfg.Lobby, netip.AddrPortFrom(host, r.Port)
			rw.name, rw.game, rw.mapID = value(kv, "name"), value(kv, "game"), value(kv, "map")
		}
	}
	if s.describer != nil {
		s.describer.Describe(snap.Rooms, func(i int, d Details) {
			rw := &rows[i]
			rw.listed, rw.lobby, rw.bots, rw.gameVersion = true, d.Lobby, d.Bots, d.GameVersion
			if safeURL(d.GameURL) {
				rw.gameURL = d.GameURL
			}
		})
	}
	return slices.DeleteFunc(rows, func(r row) bool { return !r.listed })
}

func value(kv gg2.KeyValues, k string) string {
	v, _ := kv.Get(k)
	return string(v)
}

// The page, in pieces around the rows.
const (
	htmlHead = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>
body { font-family: Verdana, sans-serif; font-size: 10pt; background: #c8c8c8; color: #000; margin: 0; padding: 12px 30px; }
h1 { background: #775e57; color: #fff; margin: 0; padding: 4px 14px; font-size: 16pt; font-weight: normal; }
h2 { background: #cdb6a7; font-size: 14pt; margin: 10px 0; padding: 2px 10px; }
p.desc { background: #cdb6a7; font-size: 8pt; margin: 10px 0; padding: 2px 10px; }
table { border-collapse: collapse; margin: 0 auto; }
td, th { border: 1px solid #000; padding: 2px 5px; }
th { background: #775e57; color: #fff; font-weight: normal; border-bottom: 2px solid #000; }
tr { background: #ecedf3; }
td:nth-child(odd) { background: #f6f6f6; }
</style>
</head>
<body>
<h1>%[1]s</h1>
`
	htmlTableHead = `<p class="desc">Game links are given by the game servers themselves and have nothing to do with this site.</p>
<table>
<thead><tr><th>PW</th><th>Name</th><th>Map</th><th>Players</th><th>Game</th><th>Address</th></tr></thead>
<tbody>
`
	htmlTableTail = "</tbody>\n</table>\n"
	htmlNone      = "<p>No servers are active.</p>\n"
	htmlCut       = "<p>%d more servers are not shown.</p>\n"
	htmlTail      = `<p><a href="/status.json">This list as JSON</a></p>
</body>
</html>
`
)

// appendHTML writes the page: one table per lobby with servers, and how
// many servers were left out.
func (s *Server) appendHTML(b []byte, rows []row, cut int) []byte {
	title := string(appendText(nil, s.cfg.Title))
	b = fmt.Appendf(b, htmlHead, title)
	if len(rows) == 0 && cut == 0 {
		b = append(b, htmlNone...)
	}
	for i, r := range rows {
		if i == 0 || r.lobby != rows[i-1].lobby {
			if i > 0 {
				b = append(b, htmlTableTail...)
			}
			b = append(b, "<h2>Active servers in the "...)
			b = appendText(b, s.lobbyName(r.lobby))
			b = append(b, "</h2>\n"...)
			b = append(b, htmlTableHead...)
		}
		b = append(b, r.enc...)
	}
	if len(rows) > 0 {
		b = append(b, htmlTableTail...)
	}
	if cut > 0 {
		b = fmt.Appendf(b, htmlCut, cut)
	}
	return append(b, htmlTail...)
}

// appendRow writes one server's row.
func appendRow(b []byte, r row) []byte {
	b = append(b, "<tr><td>"...)
	if r.password {
		b = append(b, 'X')
	}
	b = append(b, "</td><td>"...)
	b = appendText(b, r.name)
	b = append(b, "</td><td>"...)
	b = appendText(b, r.mapID)
	b = append(b, "</td><td>"...)
	b = appendPlayers(b, r)
	b = append(b, "</td><td>"...)
	if r.gameURL != "" {
		b = append(b, `<a rel="nofollow noopener noreferrer" href="`...)
		b = appendText(b, r.gameURL)
		b = append(b, `">`...)
	}
	b = appendText(b, r.game)
	if r.gameVersion != "" {
		b = append(b, ' ')
		b = appendText(b, r.gameVersion)
	}
	if r.gameURL != "" {
		b = append(b, "</a>"...)
	}
	b = append(b, "</td><td>"...)
	b = r.addr.AppendTo(b)
	return append(b, "</td></tr>\n"...)
}

// appendPlayers writes players/slots, or players+bots/slots.
func appendPlayers(b []byte, r row) []byte {
	b = strconv.AppendInt(b, int64(r.players), 10)
	if r.bots != 0 {
		b = append(b, '+')
		b = strconv.AppendInt(b, int64(r.bots), 10)
	}
	b = append(b, '/')
	return strconv.AppendInt(b, int64(r.slots), 10)
}

// The JSON page.
type (
	jsonList struct {
		Lobbies []jsonLobby `json:"lobbies"`
		// NotShown counts the servers left out by the page's size.
		NotShown int `json:"not_shown,omitempty"`
	}
	jsonLobby struct {
		ID      string       `json:"id"`
		Name    string       `json:"name"`
		Servers []jsonServer `json:"servers"`
	}
	jsonServer struct {
		Room        uint32 `json:"room"`
		Password    bool   `json:"password"`
		Name        string `json:"name"`
		Map         string `json:"map"`
		Players     int    `json:"players"`
		Bots        int    `json:"bots"`
		Slots       int    `json:"slots"`
		Game        string `json:"game"`
		GameVersion string `json:"game_version,omitempty"`
		GameURL     string `json:"game_url,omitempty"`
		Address     string `json:"address"`
	}
)

// appendJSON writes the JSON page, jsonList as encoding/json writes it,
// from the rows' own encodings. encoding/json writes invalid UTF-8 as
// U+FFFD and <, > and & as \u escapes, so the text is safe to embed too.
func (s *Server) appendJSON(rows []row, cut int) []byte {
	b := []byte(`{"lobbies":[`)
	for i, r := range rows {
		if i == 0 || r.lobby != rows[i-1].lobby {
			if i > 0 {
				b = append(b, "]},"...)
			}
			b = append(b, `{"id":`...)
			b = append(b, mustJSON(r.lobby.String())...)
			b = append(b, `,"name":`...)
			b = append(b, mustJSON(s.lobbyName(r.lobby))...)
			b = append(b, `,"servers":[`...)
		} else {
			b = append(b, ',')
		}
		b = append(b, r.enc...)
	}
	if len(rows) > 0 {
		b = append(b, "]}"...)
	}
	b = append(b, ']')
	if cut > 0 {
		b = fmt.Appendf(b, `,"not_shown":%d`, cut)
	}
	return append(b, "}\n"...)
}

// jsonRow is r in the JSON page.
func jsonRow(r row) jsonServer {
	return jsonServer{
		Room: r.id, Password: r.password, Name: r.name, Map: r.mapID,
		Players: r.players, Bots: r.bots, Slots: r.slots,
		Game: r.game, GameVersion: r.gameVersion, GameURL: r.gameURL, Address: r.addr.String(),
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // strings, numbers and bools always encode
		panic(err)
	}
	return b
}
