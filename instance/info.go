package instance

import (
	"cmp"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// BrowserInfo is what a room shows in Teeworlds/DDNet server browsers,
// which query the room's own UDP port. The SDK fills in its defaults and
// hands it to a game that implements [Describer] to change.
type BrowserInfo struct {
	Name     string // "Foyer room <id>" by default
	Map      string // DefaultMap by default
	GameType string // DefaultGameType by default
	// Players names the connected players, in the order the game wants
	// them shown; it comes empty, with room to append. The answer lists
	// as many players as the game reported as connected, or as Players
	// names if that is more; those without a name here are called
	// "player N". Player IPs are never shown.
	Players []string
}

// Describer is implemented by a Game that names itself, its map, its game
// type or its players in server browsers.
//
// Describe is called while the SDK answers a browser, from inside a
// ReadFrom call on the game's socket and on that caller's goroutine, so a
// game that reads its socket from one goroutine may read its own state
// without locking. It should be quick and should not keep info.
type Describer interface {
	Describe(info *BrowserInfo)
}

// What a room shows in server browsers unless its game says otherwise.
const (
	DefaultMap      = "lobby"
	DefaultGameType = "foyer"
	// InfoVersion is the version a room reports: the Teeworlds protocol
	// version that browsers expect, then Foyer's name.
	InfoVersion = "0.6.4, foyer"
)

// Bounds of the info answers. A request is 15 bytes and the protocol has
// no exchange by which a browser could show it receives what is sent to
// its address, so every answer is one a spoofed source could turn against
// a victim: it is one datagram, at most teeinfo.MaxDatagram bytes, of what
// the room itself holds (its name, map and players), and each network gets
// a few per second, the room as a whole a few dozen.
const (
	// MaxInfoPackets caps the datagrams sent for one request; a player
	// list that needs more is cut (the answer then lists, and counts as
	// clients, as many players as fit). With default names about 60
	// players fit in the extended answer, 16 in the vanilla one.
	MaxInfoPackets = 1
	// InfoInterval and InfoBurst are the answers a source network (an
	// IPv4 /24, an IPv6 /56, as the lobby counts them) gets: one per
	// interval, up to burst at once.
	InfoInterval = 500 * time.Millisecond
	InfoBurst    = 5
	// allInterval and allBurst bound the answers of the whole room.
	allInterval = 25 * time.Millisecond
	allBurst    = 40
	// infoNetworks is how many source networks are tracked at once; the
	// least recently seen make room for new ones.
	infoNetworks = 4096
)

// isConnless reports whether b looks like a Teeworlds connless datagram:
// six 0xFF bytes, or DDNet's "xe" header followed by the 0xFF padding.
// These are the SDK's, whether or not they are a request it answers: no
// Foyer game packet starts this way.
func isConnless(b []byte) bool {
	if len(b) >= 6 && string(b[:6]) == "\xff\xff\xff\xff\xff\xff" {
		return true
	}
	return len(b) >= 10 && string(b[:2]) == "xe" && string(b[6:10]) == "\xff\xff\xff\xff"
}

// infoAnswerer builds and sends info answers. Everything it needs per
// answer is kept and reused, so a steady stream of requests allocates
// nothing.
type infoAnswerer struct {
	rep      *reporter
	game     Describer // nil when the game does not describe itself
	name     string
	maxSlots int

	mu      sync.Mutex // one answer at a time, whoever reads the socket
	limit   limiter
	browser BrowserInfo
	info    teeinfo.Info
	names   []string // "player N", made once per N
	vanilla [1][]byte
	pkts    [][]byte
}

func newInfoAnswerer(a Assignment, rep *reporter, g Game) *infoAnswerer {
	d, _ := g.(Describer)
	return &infoAnswerer{
		rep:      rep,
		game:     d,
		name:     "Foyer room " + strconv.FormatUint(uint64(a.RoomID), 10),
		maxSlots: a.MaxPlayers,
		limit:    newLimiter(),
	}
}

// answer answers b, a connless datagram from addr to the room's address
// local, from there (see roomConn.writeFrom). It writes with an AddrPort
// because WriteTo with a net.Addr allocates.
func (ia *infoAnswerer) answer(c *roomConn, b []byte, addr net.Addr, local netip.Addr, now time.Time) {
	u, ok := addr.(*net.UDPAddr)
	if !ok {
		return
	}
	to := u.AddrPort()
	ia.mu.Lock()
	defer ia.mu.Unlock()
	for _, d := range ia.reply(b, to.Addr(), now) {
		_, _ = c.writeFrom(d, to, local)
	}
}

// reply returns the datagrams that answer b, sent from ip at now: none
// when b is not a request, or when ip's network or the room has spent its
// budget. The cheap IsRequest check comes first so that garbage costs no
// parse error. The caller holds ia.mu.
func (ia *infoAnswerer) reply(b []byte, ip netip.Addr, now time.Time) [][]byte {
	if !teeinfo.IsRequest(b) {
		return nil
	}
	req, err := teeinfo.ParseRequest(b)
	if err != nil || !ia.limit.allow(ip, now) {
		return nil
	}
	return ia.build(req)
}

// build returns the datagrams that answer req, at most MaxInfoPackets.
// They live in ia's buffers until the next call.
func (ia *infoAnswerer) build(req teeinfo.Request) [][]byte {
	ia.describe()
	ia.info.Token = req.ReplyToken()
	if !req.Extended {
		// AppendVanilla keeps to one datagram by itself.
		ia.vanilla[0] = ia.info.AppendVanilla(ia.vanilla[0][:0])
		return ia.vanilla[:]
	}
	for {
		pkts, err := ia.info.AppendExtended(ia.pkts[:0])
		ia.pkts = pkts
		if err == nil && len(pkts) <= MaxInfoPackets {
			return pkts
		}
		// Too long a list: cut it, so that receivers still count as many
		// players as are listed. Each round lists fewer, so it ends.
		n := len(ia.info.Players) / 2
		if err == nil {
			n = min(len(ia.info.Players)-1, len(ia.info.Players)*MaxInfoPackets/len(pkts))
		}
		ia.info.Players = ia.info.Players[:n]
		ia.info.NumClients = n
	}
}

// describe fills ia.info from the SDK's defaults, the reported players
// and the game's own description.
func (ia *infoAnswerer) describe() {
	bi := &ia.browser
	*bi = BrowserInfo{Name: ia.name, Map: DefaultMap, GameType: DefaultGameType, Players: bi.Players[:0]}
	name, mode, mapName := ia.rep.describedAs()
	bi.Name = cmp.Or(name, bi.Name)
	bi.GameType = cmp.Or(mode, bi.GameType)
	bi.Map = cmp.Or(mapName, bi.Map)
	if ia.game != nil {
		ia.game.Describe(bi)
	}
	n := min(max(ia.rep.playerCount(), len(bi.Players)), teeinfo.MaxPlayers)
	for i := len(ia.names); i < n; i++ {
		ia.names = append(ia.names, "player "+strconv.Itoa(i+1))
	}
	in := &ia.info
	players := in.Players[:0]
	for i := range n {
		name := ia.names[i]
		if i < len(bi.Players) && bi.Players[i] != "" {
			name = bi.Players[i]
		}
		players = append(players, teeinfo.Player{Name: name, Country: -1, IsPlayer: true})
	}
	*in = teeinfo.Info{
		Version:    InfoVersion,
		Name:       bi.Name,
		Map:        bi.Map,
		GameType:   bi.GameType,
		NumPlayers: n,
		MaxPlayers: max(ia.maxSlots, n),
		NumClients: n,
		MaxClients: max(ia.maxSlots, n),
		Players:    players,
	}
}

// limiter is a token bucket per source network, and one for the whole
// room.
type limiter struct {
	nets *limit.Budget
	all  *rate.Limiter
}

func newLimiter() limiter {
	return limiter{
		nets: limit.NewNetworkLimit(rate.Every(InfoInterval), InfoBurst, infoNetworks),
		all:  rate.NewLimiter(rate.Every(allInterval), allBurst),
	}
}

// allow spends one answer from ip's network and from the room's budget,
// and reports whether both had one.
func (l *limiter) allow(ip netip.Addr, now time.Time) bool {
	return l.nets.Allow(ip, 1, now) && l.all.AllowN(now, 1)
}
