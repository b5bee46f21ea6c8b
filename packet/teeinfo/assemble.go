package teeinfo

// Assembler collects the datagrams of one extended reply, in any order,
// into one Info. It checks that every packet carries the same token, that
// no packet number comes twice, and it knows the reply is complete when
// the players received equal the main packet's NumClients. A vanilla reply
// is complete by itself (it lists at most VanillaMaxClients players, so its
// counts may exceed its list); an extended packet after it starts over. The zero value is ready to use.
type Assembler struct {
	main     Info
	haveMain bool
	token    int
	seen     uint64 // bit n: packet n received
	parts    [MaxPackets][]Player
	count    int
	vanilla  bool // a vanilla reply: complete whatever its counts say
}

// Reset forgets everything collected, keeping nothing.
func (a *Assembler) Reset() { *a = Assembler{} }

// Add takes one parsed reply datagram and reports whether the reply is now
// complete. A packet that is refused (ErrType for a Reply of no known
// kind, ErrPacketNo, ErrToken, ErrDuplicate, ErrTooManyPlayers) leaves the assembler as it was, so a caller may keep
// feeding it.
func (a *Assembler) Add(r *Reply) (complete bool, err error) {
	if r.Kind == Vanilla {
		a.Reset()
		a.main, a.haveMain = r.Info, true
		a.token = r.Info.Token
		a.seen = 1
		a.count = len(r.Info.Players)
		a.parts[0] = r.Info.Players
		a.vanilla = true
		return true, nil
	}
	if r.Kind != Extended && r.Kind != More {
		return a.complete(), ErrType
	}
	if a.vanilla {
		a.Reset()
	}
	no := r.PacketNo
	if r.Kind == Extended {
		no = 0
	}
	if no < 0 || no >= MaxPackets {
		return a.complete(), ErrPacketNo
	}
	if a.seen != 0 && r.Info.Token != a.token {
		return a.complete(), ErrToken
	}
	if a.seen&(1<<no) != 0 {
		return a.complete(), ErrDuplicate
	}
	count := a.count + len(r.Info.Players)
	if count > MaxPlayers ||
		r.Kind == Extended && (r.Info.NumClients < 0 || count > r.Info.NumClients) ||
		a.haveMain && count > a.main.NumClients {
		return a.complete(), ErrTooManyPlayers
	}
	a.token = r.Info.Token
	a.seen |= 1 << no
	a.count = count
	a.parts[no] = r.Info.Players
	if r.Kind == Extended {
		a.main, a.haveMain = r.Info, true
	}
	return a.complete(), nil
}

func (a *Assembler) complete() bool {
	return a.vanilla || a.haveMain && a.count == a.main.NumClients
}

// Info returns what was collected: the main packet's fields and every
// player received, in packet order. It is the whole reply once Add has
// reported completion.
func (a *Assembler) Info() Info {
	in := a.main
	in.Players = make([]Player, 0, a.count)
	for _, part := range a.parts {
		in.Players = append(in.Players, part...)
	}
	return in
}
