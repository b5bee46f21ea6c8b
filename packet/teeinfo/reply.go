package teeinfo

import "bytes"

// Kind is the type of a reply datagram.
type Kind uint8

const (
	// Vanilla is an inf3 reply: all of the info in one datagram.
	Vanilla Kind = 1 + iota
	// Extended is an iext reply: the main packet of an extended reply.
	Extended
	// More is an iex+ packet: more clients of an extended reply.
	More
)

var kindTypes = [...]string{Vanilla: "inf3", Extended: "iext", More: "iex+"}

// String returns the 4-byte type: "inf3", "iext" or "iex+".
func (k Kind) String() string {
	if k >= Vanilla && k <= More {
		return kindTypes[k]
	}
	return "unknown"
}

// FlagPassword is the Flags bit of a server that asks for a password.
const FlagPassword = 1

// Player is one connected client.
type Player struct {
	Name     string
	Clan     string
	Country  int // ISO 3166-1 numeric, -1 when unset
	Score    int
	IsPlayer bool // false for a spectator
}

// Info is what a server says about itself.
type Info struct {
	Token    int // from the request (see Request.ReplyToken); -1 unsolicited
	Version  string
	Name     string
	Map      string
	MapCRC   int // extended only
	MapSize  int // extended only
	GameType string
	Flags    int // FlagPassword

	NumPlayers int // clients that are not spectators
	MaxPlayers int
	NumClients int // all clients; an extended reply lists this many
	MaxClients int

	Players []Player
}

// Reply is one reply datagram.
type Reply struct {
	Kind Kind
	// Info is the whole info for Vanilla and Extended. For More only
	// Token and Players are set.
	Info Info
	// PacketNo is More's packet number, 1..63; 0 otherwise.
	PacketNo int
}

// MaxPackets is how many datagrams one extended reply may span: the main
// packet and iex+ packets 1..63.
const MaxPackets = 64

// MaxPlayers bounds the clients this package reads from one datagram and
// the assembler collects for one reply.
const MaxPlayers = 1024

// headerLen is the padding and type that start every reply.
const headerLen = 14

// kindOf reads the type of a reply datagram.
func kindOf(b []byte) (Kind, error) {
	if len(b) < headerLen {
		return 0, fail("reply", len(b), ErrTruncated)
	}
	if !bytes.Equal(b[:10], replyPadding) {
		return 0, fail("reply", 0, ErrHeader)
	}
	for k := Vanilla; k <= More; k++ {
		if string(b[10:14]) == kindTypes[k] {
			return k, nil
		}
	}
	return 0, fail("reply", 10, ErrType)
}

// ParseReply decodes an inf3, iext or iex+ datagram.
func ParseReply(b []byte) (Reply, error) {
	k, err := kindOf(b)
	if err != nil {
		return Reply{}, err
	}
	rep := Reply{Kind: k}
	in := &rep.Info
	r := &reader{msg: k.String(), b: b, s: string(b), off: headerLen}
	if err := r.ints(&in.Token); err != nil {
		return Reply{}, err
	}
	switch k {
	case Vanilla:
		err = r.strs(&in.Version, &in.Name, &in.Map, &in.GameType)
		if err == nil {
			err = r.ints(&in.Flags, &in.NumPlayers, &in.MaxPlayers, &in.NumClients, &in.MaxClients)
		}
	case Extended:
		err = r.strs(&in.Version, &in.Name, &in.Map)
		if err == nil {
			err = r.ints(&in.MapCRC, &in.MapSize)
		}
		if err == nil {
			err = r.strs(&in.GameType)
		}
		if err == nil {
			err = r.ints(&in.Flags, &in.NumPlayers, &in.MaxPlayers, &in.NumClients, &in.MaxClients)
		}
		if err == nil {
			_, err = r.raw() // reserved
		}
	case More:
		start := r.off
		err = r.ints(&rep.PacketNo)
		if err == nil && (rep.PacketNo < 1 || rep.PacketNo >= MaxPackets) {
			err = fail(r.msg, start, ErrPacketNo)
		}
		if err == nil {
			_, err = r.raw() // reserved
		}
	}
	if err != nil {
		return Reply{}, err
	}
	for r.more() {
		if len(in.Players) == MaxPlayers {
			return Reply{}, fail(r.msg, r.off, ErrTooManyPlayers)
		}
		p, err := readPlayer(r, k != Vanilla)
		if err != nil {
			return Reply{}, err
		}
		in.Players = append(in.Players, p)
	}
	return rep, nil
}

func readPlayer(r *reader, extended bool) (Player, error) {
	var p Player
	var isPlayer int
	err := r.strs(&p.Name, &p.Clan)
	if err == nil {
		err = r.ints(&p.Country, &p.Score, &isPlayer)
	}
	if err == nil && extended {
		_, err = r.raw() // reserved
	}
	p.IsPlayer = isPlayer != 0
	return p, err
}

// Append encodes the datagram exactly as described: every player in
// Info.Players, whatever the size; a Reply of no known Kind appends
// nothing. Ints must fit in 32 bits to parse back. To build replies that respect the
// datagram limit, use Info.AppendVanilla and Info.AppendExtended.
func (rep *Reply) Append(b []byte) []byte {
	in := &rep.Info
	switch rep.Kind {
	case Vanilla:
		b = in.appendVanillaHeader(b)
	case Extended:
		b = in.appendExtendedHeader(b)
	case More:
		b = appendMoreHeader(b, in.Token, rep.PacketNo)
	default:
		return b
	}
	for i := range in.Players {
		b = appendPlayer(b, &in.Players[i], rep.Kind != Vanilla)
	}
	return b
}

func (in *Info) appendVanillaHeader(b []byte) []byte {
	b = appendType(b, Vanilla)
	b = appendInt(b, in.Token)
	for _, s := range [...]string{in.Version, in.Name, in.Map, in.GameType} {
		b = appendString(b, s)
	}
	for _, n := range [...]int{in.Flags, in.NumPlayers, in.MaxPlayers, in.NumClients, in.MaxClients} {
		b = appendInt(b, n)
	}
	return b
}

func (in *Info) appendExtendedHeader(b []byte) []byte {
	b = appendType(b, Extended)
	b = appendInt(b, in.Token)
	for _, s := range [...]string{in.Version, in.Name, in.Map} {
		b = appendString(b, s)
	}
	b = appendInt(b, in.MapCRC)
	b = appendInt(b, in.MapSize)
	b = appendString(b, in.GameType)
	for _, n := range [...]int{in.Flags, in.NumPlayers, in.MaxPlayers, in.NumClients, in.MaxClients} {
		b = appendInt(b, n)
	}
	return append(b, 0) // reserved
}

func appendMoreHeader(b []byte, token, packetNo int) []byte {
	b = appendType(b, More)
	b = appendInt(b, token)
	b = appendInt(b, packetNo)
	return append(b, 0) // reserved
}

func appendType(b []byte, k Kind) []byte {
	b = append(b, replyPadding...)
	return append(b, kindTypes[k]...)
}

func appendPlayer(b []byte, p *Player, extended bool) []byte {
	b = appendString(b, p.Name)
	b = appendString(b, p.Clan)
	b = appendInt(b, p.Country)
	b = appendInt(b, p.Score)
	isPlayer := 0
	if p.IsPlayer {
		isPlayer = 1
	}
	b = appendInt(b, isPlayer)
	if extended {
		b = append(b, 0) // reserved
	}
	return b
}
