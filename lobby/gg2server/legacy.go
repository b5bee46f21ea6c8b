package gg2server

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/foyerlobby/foyer/internal/connlimit"
	"github.com/foyerlobby/foyer/lobby/internal/frontend"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// What a legacy registration is listed as, in the reference lobby's
// words: a legacy server runs "the" legacy game unless its info string
// names a mod; Orpheon's Hosting Utilities (mod "OHU") has a name, short
// name and page of its own; a mod's name of at most 10 bytes is short
// enough to need no game_short. (Byte slices, as the table holds values;
// never modified.)
var (
	legacyGame      = []byte("Legacy Gang Garrison 2 version or mod")
	legacyGameShort = []byte("old")
	ohuMod          = []byte("OHU")
	ohuGame         = []byte("Orpheon's Hosting Utilities")
	ohuGameShort    = []byte("ohu")
	ohuGameURL      = []byte("http://www.ganggarrison.com/forums/index.php?topic=28839.0")
)

const shortModName = 10

// legacyKV is the key/value table a legacy registration stands for, in
// dst's storage; its values alias in and the constants above.
func legacyKV(dst gg2.KeyValues, in *gg2.LegacyInfo, version *gg2.UUID) gg2.KeyValues {
	game, short, url := legacyGame, legacyGameShort, []byte(nil)
	if in.HasMod {
		switch {
		case bytes.Equal(in.Mod, ohuMod):
			game, short, url = ohuGame, ohuGameShort, ohuGameURL
		case len(in.Mod) <= shortModName:
			game, short = in.Mod, nil
		default:
			game = in.Mod
		}
	}
	kv := append(dst[:0], gg2.KeyValue{Key: "name", Value: in.Name}, gg2.KeyValue{Key: "game", Value: game})
	if short != nil {
		kv = append(kv, gg2.KeyValue{Key: "game_short", Value: short})
	}
	if url != nil {
		kv = append(kv, gg2.KeyValue{Key: "game_url", Value: url})
	}
	if in.HasMap {
		kv = append(kv, gg2.KeyValue{Key: "map", Value: in.Map})
	}
	return append(kv, gg2.KeyValue{Key: "protocol_id", Value: version[:]})
}

// handleLegacyDatagram applies a legacy registration: a TCP server at the
// source address, in the GG2 lobby, listed once a TCP connect to it works.
// It runs on the legacy port's read loop only.
func (s *Server) handleLegacyDatagram(ctx context.Context, b []byte, ip netip.Addr, now time.Time) {
	if !gg2.IsLegacyRegistration(b) {
		s.drops.Add("legacy_unknown_message")
		return
	}
	if !s.allow(ip, now) {
		return
	}
	r, err := gg2.ParseLegacyRegistration(b)
	if err != nil {
		s.drops.Add("legacy_" + reason(err))
		return
	}
	if !ip.Is4() { // the legacy list carries IPv4 addresses only
		s.drops.Add("legacy_addr")
		return
	}
	in := gg2.ParseLegacyInfo(r.Info)
	s.legacyKV = legacyKV(s.legacyKV, &in, &r.Version.ID)
	var flags uint16
	if in.Private {
		flags = gg2.FlagPassword
	}
	s.table.apply(ctx, ip, &update{
		lobby: gg2.GG2LobbyUUID, transport: gg2.TCP, port: r.Port,
		slots: in.Slots, players: in.Players, flags: flags, kv: s.legacyKV,
	}, now)
	s.requests.Add("legacy_register")
}

// legacyQuery answers a legacy query: the version, one byte or 17.
func (s *Server) legacyQuery(c *net.TCPConn, place *connlimit.Conn) ([]byte, bool) {
	p := s.ports[1]
	var q [17]byte
	if !s.readQuery(p, c, q[:1]) {
		return nil, false
	}
	n := gg2.LegacyVersionLen(q[0])
	if !s.readQuery(p, c, q[1:n]) {
		return nil, false
	}
	place.Busy()
	v, err := gg2.ParseLegacyQuery(q[:n])
	return s.respond(p, err, func() ([]byte, error) { return s.legacyReply(v.ID, s.host(c)) })
}

// emptyLegacyList is the reply listing no server.
var emptyLegacyList = []byte{0}

// legacyReply returns the encoded legacy list of the servers of version:
// registered servers of the GG2 lobby whose protocol_id is version and
// that have an IPv4 address, and Foyer's own rooms at host when host is
// IPv4 and Config.ProtocolID is version or unset; at most 255 and
// MaxListBytes, own rooms first, then the registered servers of each
// network in turn.
func (s *Server) legacyReply(version gg2.UUID, host netip.Addr) ([]byte, error) {
	ownOK := host.Is4() && (s.cfg.ProtocolID == gg2.UUID{} || s.cfg.ProtocolID == version)
	return s.reply(replyKey{legacy: true, id: version, host: host}, func(snap room.Snapshot, byRoom map[uint32]*entry) ([]byte, int, error) {
		var own, registered []listed
		for _, r := range snap.Rooms {
			switch e := byRoom[r.ID]; {
			case e != nil:
				if e.hasProtocol && e.protocol == version && e.lobby == gg2.GG2LobbyUUID && e.addr.Addr().Is4() {
					registered = append(registered, listed{r, e})
				}
			case ownOK && r.Source.Own() && r.Public():
				own = append(own, listed{r, nil})
			}
		}
		var info [gg2.MaxLegacyInfo]byte
		b := []byte{0}
		n, cut := 0, 0
		for _, l := range inTurn(own, registered) {
			if n == gg2.MaxLegacyServers {
				cut++
				continue
			}
			var (
				in   gg2.LegacyInfo
				addr netip.AddrPort
			)
			if l.e != nil {
				in, addr = l.e.legacyInfo(l.r), l.e.addr
			} else {
				in, addr = s.ownLegacyInfo(l.r), netip.AddrPortFrom(host, l.r.Port)
			}
			start := len(b)
			var err error
			if b, err = gg2.AppendLegacyServer(b, 0, in.Append(info[:0]), addr); err != nil {
				return nil, 0, err
			}
			if len(b) > s.cfg.MaxListBytes {
				b = b[:start]
				cut++
				continue
			}
			n++
		}
		if cut > 0 {
			s.drops.Counter("legacy_list_cut").Add(uint64(cut))
		}
		if n == 0 {
			return emptyLegacyList, 0, nil
		}
		b[0] = byte(n)
		return b, n, nil
	})
}

// legacyInfo is what a legacy list shows of registered room r: the counts
// every listing shows, the rest as registered.
func (e *entry) legacyInfo(r room.Room) gg2.LegacyInfo {
	in := gg2.LegacyInfo{
		Private: r.Password, HasCounts: true, Bots: e.bots,
		Players: frontend.Clamp16(r.Occupied()), Slots: frontend.Clamp16(r.MaxPlayers),
	}
	in.Name, _ = e.kv.Get("name")
	in.Map, in.HasMap = e.kv.Get("map")
	return in
}

// ownLegacyInfo is what a legacy list shows of one of Foyer's own rooms.
func (s *Server) ownLegacyInfo(r room.Room) gg2.LegacyInfo {
	kv := frontend.RoomKeys(r, s.cfg.Game)
	in := gg2.LegacyInfo{
		Private: r.Password, HasCounts: true,
		Players: frontend.Clamp16(r.Occupied()), Slots: frontend.Clamp16(r.MaxPlayers),
	}
	in.Name, _ = kv.Get("name")
	in.Map, in.HasMap = kv.Get("map")
	return in
}
