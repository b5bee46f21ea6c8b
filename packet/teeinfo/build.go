package teeinfo

// MaxDatagram is the largest datagram this package builds: DDNet's
// NET_MAX_PACKETSIZE. DDNet keeps each extended info packet under it by
// starting a new packet once the clients after the type and token would
// reach NET_MAX_PAYLOAD-18 = 1376 bytes; counting the whole datagram
// against 1400 gives the same ceiling without guessing the token's size.
const MaxDatagram = 1400

// VanillaMaxClients is the most clients a vanilla reply lists, and the
// ceiling of its counts, as in DDNet: vanilla browsers know no more.
const VanillaMaxClients = 16

// AppendVanilla builds the inf3 reply to a vanilla request: the counts
// capped at VanillaMaxClients, and as many of the first VanillaMaxClients
// players as fit in MaxDatagram.
func (in *Info) AppendVanilla(b []byte) []byte {
	v := *in
	for _, n := range [...]*int{&v.NumPlayers, &v.MaxPlayers, &v.NumClients, &v.MaxClients} {
		*n = min(*n, VanillaMaxClients)
	}
	start := len(b)
	b = v.appendVanillaHeader(b)
	for i := range v.Players[:min(len(v.Players), VanillaMaxClients)] {
		mark := len(b)
		if b = appendPlayer(b, &v.Players[i], false); len(b)-start > MaxDatagram {
			return b[:mark]
		}
	}
	return b
}

// AppendExtended builds the reply to an extended request: an iext packet
// and as many iex+ packets as the players need, each at most MaxDatagram
// bytes. It reuses the buffers of pkts (pass pkts[:0] to recycle a
// previous reply's). It fails with ErrTooManyPlayers when the players need
// more than MaxPackets datagrams. Info.NumClients should equal
// len(Info.Players): receivers count players against it.
//
// The fixed fields of an iext packet take at most about 1200 bytes (four
// strings of MaxString bytes and eight ints), and one player at most about
// 600, so a player that does not fit after the main packet's fields always
// fits in a fresh iex+ packet.
func (in *Info) AppendExtended(pkts [][]byte) ([][]byte, error) {
	pkts = pkts[:0]
	b := in.appendExtendedHeader(recycle(pkts))
	for i := range in.Players {
		mark := len(b)
		if b = appendPlayer(b, &in.Players[i], true); len(b) <= MaxDatagram {
			continue
		}
		pkts = append(pkts, b[:mark])
		if len(pkts) == MaxPackets {
			return pkts[:0], ErrTooManyPlayers
		}
		b = appendMoreHeader(recycle(pkts), in.Token, len(pkts))
		b = appendPlayer(b, &in.Players[i], true)
	}
	return append(pkts, b), nil
}

// recycle returns the buffer beyond len(pkts), emptied, if pkts has one.
func recycle(pkts [][]byte) []byte {
	if len(pkts) < cap(pkts) {
		return pkts[: len(pkts)+1 : cap(pkts)][len(pkts)][:0]
	}
	return nil
}
