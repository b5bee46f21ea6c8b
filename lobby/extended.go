package lobby

import (
	"encoding/binary"
	"net/netip"
	"sort"
	"time"

	"golang.org/x/time/rate"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
)

// The extension of the native protocol (package ext): filtered pages of
// rooms, CREATE with metadata, JOIN by code and password, quick join, and
// the seat tokens rooms check. An extension datagram goes through:
//
//	ext.ParseRequest    malformed: dropped, counted by ext.Reason
//	per-IP buckets      as every request
//	validation          a source that has not shown it receives gets
//	                    EXT_RETRY, no longer than its request, and nothing
//	                    else; echoing the token validates it
//	EXT_LIST            a page from the cached room list, on the loop
//	EXT_JOIN            on the loop when the table never waits and no
//	                    password is to be checked; a password on the one
//	                    password worker, throttled per source and per room
//	EXT_CREATE, QUICK   on their own goroutine, bounded with the CREATEs
//
// A seed client never gets an extension message: only extension requests
// are answered with one.

// extAnswer is the longest extension answer the retry cache keeps:
// EXT_SEAT in the legacy framing, with an IPv6 address.
const extAnswer = packet.LegacyHeaderLen + 1 + 4 + 2 + ext.CodeLen + 1 + 16 + 1 + ext.TokenLen + packet.CRCLen

// Password guesses, throttled per source network (a /24, a /56) and per
// room: what a guesser may try, whatever it forges. A JOIN with a
// password waits for the one worker that checks them, in a queue of
// pwQueue; past it, it is dropped for the client to retry.
const (
	guessRate      = 0.5 // a source network's guesses a second
	guessBurst     = 5
	roomGuessRate  = 1 // a room's guesses a second, from everyone
	roomGuessBurst = 10
	guessSources   = 65536 // networks and rooms tracked, the idlest forgotten
	pwQueue        = 64
)

// extension is the lobby's state for the extension.
type extension struct {
	rooms   room.Extended
	retry   *retryTokens
	srcs    *limit.Buckets[netip.Prefix]
	perRoom *limit.Buckets[uint32]
	pw      chan extRequest
}

func newExtension(rooms room.Table) *extension {
	x, ok := rooms.(room.Extended)
	if !ok {
		return nil
	}
	return &extension{
		rooms:   x,
		retry:   newRetryTokens(),
		srcs:    limit.NewBuckets[netip.Prefix](rate.Limit(guessRate), guessBurst, guessSources),
		perRoom: limit.NewBuckets[uint32](rate.Limit(roomGuessRate), roomGuessBurst, guessSources),
		pw:      make(chan extRequest, pwQueue),
	}
}

// extRequest is one well-formed extension CREATE, JOIN or QUICK on its
// way through the lobby.
type extRequest struct {
	m       ext.Message
	from    netip.AddrPort
	local   netip.Addr // where it arrived (arrival.to)
	src     netip.Addr // where the answer leaves from (arrival.replyFrom)
	verdict limit.Verdict
	key     retryKey
	room    room.Room // JOIN: the room it names
	conn    sender
}

// handleExt answers one extension datagram; see handle.
func (l *Lobby) handleExt(c, later sender, os *offers, b []byte, from netip.AddrPort, at arrival, now time.Time, out []byte) []byte {
	m, err := ext.ParseRequest(b)
	if err != nil {
		l.stats.drop(ext.Reason(err))
		return out
	}
	if m.Type == ext.Present || l.ext == nil {
		l.stats.drop("ext_type") // a room's message, or a table without the extension
		return out
	}
	l.stats.requestsByType.Add(extName(m.Type))
	if m.Type != ext.List && l.frozen.Load() {
		l.stats.drop("handover")
		return out
	}
	v := l.guard.Admit(from.Addr(), now)
	if !v.OK() {
		l.refused(v)
		return out
	}
	if !l.validated(&m, from.Addr(), now) {
		return l.challenge(c, &m, len(b), from, at.replyFrom, v, now, out)
	}
	rl := l.lists.get(now)
	if m.Type == ext.List {
		out = os.appendPage(out, rl, &m, at.to)
		l.send(c, out, from, at.replyFrom, v, now)
		return out
	}
	req := extRequest{m: m, from: from, local: at.to, src: at.replyFrom, verdict: v, conn: later,
		key: newRetryKey(from, m.Header, binary.BigEndian.Uint32(b[len(b)-packet.CRCLen:]))}
	if m.Type == ext.Join {
		r, err := extTarget(rl, &m, at.to)
		if err != nil {
			l.failed("ext_join", from, m.RoomID, err)
			out = appendExtAnswer(out, &req, room.Grant{}, err)
			l.send(c, out, from, at.replyFrom, v, now)
			return out
		}
		req.room = r
		if l.inlineJoin && !(r.Password && m.Password != "") {
			req.conn = c
			return l.extJoin(req, now, out)
		}
	}
	if out, found := l.extRetries.begin(req.key, now, out); found {
		return l.replay(c, out, from, at.replyFrom, v, now)
	}
	switch {
	case m.Type != ext.Join:
		if l.draining.Load() {
			req.conn = c
			return l.extAnswer(req, room.Grant{}, room.ErrClosed, now, out)
		}
		l.startExt(req, now)
	case req.room.Password && m.Password != "":
		select {
		case l.ext.pw <- req:
		default:
			l.extRetries.abandon(req.key)
			l.stats.drop("password_busy")
		}
	default:
		l.startExt(req, now)
	}
	return out
}

// extName is the counter name of an extension request.
func extName(t packet.Type) string {
	switch t {
	case ext.List:
		return "ext_list"
	case ext.Create:
		return "ext_create"
	case ext.Join:
		return "ext_join"
	}
	return "ext_quick"
}

// validated reports whether m's source has shown it receives: it echoes a
// valid retry token (which validates it for every edge), or it did so
// lately in another way (see limit.Guard.Receives).
func (l *Lobby) validated(m *ext.Message, ip netip.Addr, now time.Time) bool {
	if len(m.Token) > 0 && l.ext.retry.valid(m.Token, ip, now) {
		l.guard.Validated(ip, now)
		return true
	}
	return l.guard.Receives(ip, now)
}

// challenge answers a request of a source not yet validated with
// EXT_RETRY, when that is no longer than the n bytes of the request,
// from src (see arrival.replyFrom).
func (l *Lobby) challenge(c sender, m *ext.Message, n int, from netip.AddrPort, src netip.Addr, v limit.Verdict, now time.Time, out []byte) []byte {
	r := ext.Message{Header: packet.Header{Framing: m.Framing, Type: ext.Retry, Seq: m.Seq, Tick: m.Tick},
		Token: l.ext.retry.make(from.Addr(), now)}
	out, err := r.Append(out[:0])
	if err != nil || len(out) > n {
		l.stats.drop("ext_unpadded")
		return out[:0]
	}
	l.send(c, out, from, src, v, now)
	return out
}

// extTarget finds the room an EXT_JOIN names, as the client at local may
// join it: by id a public room only, by code any room; a room of the
// lobby's own host or of its cluster, or a registered one at local.
func extTarget(rl *roomList, m *ext.Message, local netip.Addr) (room.Room, error) {
	var r *room.Room
	var ok bool
	if m.Code != "" {
		r, ok = rl.findCode(m.Code)
	} else if r, ok = rl.find(m.RoomID); ok && r.Private {
		ok = false
	}
	switch {
	case !ok:
		return room.Room{}, room.ErrNoRoom
	case !extOffered(r, local):
		return room.Room{}, room.ErrDenied
	}
	return *r, nil
}

// extOffered reports whether a client at local may join r by the
// extension: what the native lobby reaches (reachable), and the rooms of
// the other hosts of its cluster, at their own address (EXT_SEAT carries
// it).
func extOffered(r *room.Room, local netip.Addr) bool {
	return reachable(r, local) || !r.Unchecked && r.Node != "" && r.Source.Own()
}

// startExt runs an extension CREATE, QUICK or JOIN on a goroutine of its
// own, bounded with the CREATEs.
func (l *Lobby) startExt(req extRequest, now time.Time) {
	ip := req.from.Addr()
	if req.m.Type == ext.Create {
		if v := l.guard.AdmitCreate(ip, now); !v.OK() {
			l.refused(v)
			l.extAnswer(req, room.Grant{}, room.ErrRateLimited, now, nil)
			return
		}
	}
	if !l.createSlot(func() { l.extRetries.abandon(req.key) }) {
		return
	}
	l.work.Go(func() {
		defer l.creating.Add(-1)
		var g room.Grant
		var err error
		switch req.m.Type {
		case ext.Create:
			g, err = l.ext.rooms.CreateWith(l.ctx, req.from, room.CreateOptions{
				Meta: metaOf(req.m.Meta), Private: req.m.Private, Password: req.m.Password, Client: req.m.Client})
		case ext.Quick:
			g, err = l.ext.rooms.QuickJoin(l.ctx, filterOf(&req.m.Filter), req.from, req.m.Client, func() error {
				if v := l.guard.AdmitCreate(ip, time.Now()); !v.OK() {
					l.refused(v)
					return room.ErrRateLimited
				}
				return nil
			})
		default:
			g, err = l.joinWith(req)
		}
		l.extRan(req, g, err, make([]byte, 0, extAnswer))
	})
}

// extRan ends an extension request a worker ran, which g and err ended:
// it counts and answers it, or drops it if the handover caught it (see
// handedOver). buf is scratch space it returns for reuse.
func (l *Lobby) extRan(req extRequest, g room.Grant, err error, buf []byte) []byte {
	if l.handedOver(l.extRetries, req.key, err) {
		return buf
	}
	l.granted(req, g, err)
	return l.extAnswer(req, g, err, time.Now(), buf)
}

// extJoin runs an extension JOIN on its read loop (the table never
// waits, and there is no password to check), as joinInline does a seed
// JOIN (see runInline).
func (l *Lobby) extJoin(req extRequest, now time.Time, out []byte) []byte {
	var (
		g   room.Grant
		err error
	)
	out, ran := l.runInline(l.extRetries, req.key, req.conn, req.from, req.src, req.verdict, now, out, func(b []byte) ([]byte, error) {
		g, err = l.joinWith(req)
		return appendExtAnswer(b, &req, g, err), err
	})
	if ran {
		l.granted(req, g, err)
		l.send(req.conn, out, req.from, req.src, req.verdict, now)
	}
	return out
}

// joinWith asks the table for req's seat. A validated source is a real
// one: its JOIN is a proven one.
func (l *Lobby) joinWith(req extRequest) (room.Grant, error) {
	jr := room.JoinRequest{ID: req.m.RoomID, Code: req.m.Code, Player: req.from, Proof: room.SawListing,
		Password: req.m.Password, Client: req.m.Client}
	return l.ext.rooms.JoinWith(l.ctx, jr)
}

// passwordWorker checks the passwords of extension JOINs, one at a time,
// each within its source's and its room's guesses: a wrong one takes a
// guess from both.
func (l *Lobby) passwordWorker() {
	buf := make([]byte, 0, extAnswer)
	for req := range l.ext.pw {
		now := time.Now()
		src := limit.PrefixOf(req.from.Addr())
		if !l.ext.srcs.Has(src, now) || !l.ext.perRoom.Has(req.room.ID, now) {
			l.failed("ext_join", req.from, req.room.ID, room.ErrRateLimited)
			buf = l.extAnswer(req, room.Grant{}, room.ErrRateLimited, now, buf[:0])
			continue
		}
		g, err := l.joinWith(req)
		if err == room.ErrWrongPassword {
			l.ext.srcs.Allow(src, now)
			l.ext.perRoom.Allow(req.room.ID, now)
		}
		buf = l.extRan(req, g, err, buf)
	}
}

// granted counts the outcome of an extension CREATE, JOIN or QUICK.
func (l *Lobby) granted(req extRequest, g room.Grant, err error) {
	if err != nil {
		l.failed(extName(req.m.Type), req.from, req.m.RoomID, err)
		return
	}
	l.stats.grantedByType.Add(extName(req.m.Type))
	l.lists.changed()
	if req.m.Type == ext.Create {
		l.log.Info().Uint32("room", g.Room.ID).Uint16("port", g.Room.Port).Stringer("creator", req.from).
			Bool("private", g.Room.Private).Bool("password", g.Room.Password).Msg("create granted")
	}
}

// extAnswer encodes the outcome of an extension request, records it for
// retries and sends it.
func (l *Lobby) extAnswer(req extRequest, g room.Grant, err error, now time.Time, buf []byte) []byte {
	buf = appendExtAnswer(buf[:0], &req, g, err)
	l.extRetries.finish(req.key, buf)
	l.send(req.conn, buf, req.from, req.src, req.verdict, now)
	return buf
}

// appendExtAnswer encodes EXT_SEAT for g, or EXT_REFUSED when err is set,
// in the request's framing, sequence and tick.
func appendExtAnswer(b []byte, req *extRequest, g room.Grant, err error) []byte {
	h := req.m.Header
	m := ext.Message{Header: packet.Header{Framing: h.Framing, Seq: h.Seq, Tick: h.Tick}}
	if err != nil {
		m.Type, m.Reason = ext.Refused, uint8(room.CodeOf(err))
	} else {
		m.Type, m.RoomID, m.Port, m.Code, m.SeatToken = ext.Seat, g.Room.ID, g.Room.Port, g.Room.Code, g.Token
		if a := g.Room.Host.Unmap(); a.IsValid() && a != req.local.Unmap() {
			m.Addr = a
		}
	}
	out, encErr := m.Append(b)
	if encErr != nil {
		// A room's code is one the table made, and a token one it
		// signed: only a room without a code (registered) lands here.
		m = ext.Message{Header: m.Header, Reason: uint8(room.CodeDenied)}
		m.Type = ext.Refused
		out, _ = m.Append(b)
	}
	return out
}

// appendPage appends the EXT_ROOMS page that answers m: the public rooms
// offered at local that m's filter matches, by id after m's cursor, as
// many as fit in one datagram (and m's limit), and the cursor of the next
// page when more match.
func (os *offers) appendPage(b []byte, rl *roomList, m *ext.Message, local netip.Addr) []byte {
	f := filterOf(&m.Filter)
	limit := int(m.Limit)
	if limit == 0 {
		limit = 0xFF
	}
	budget := ext.MaxDatagram - ext.RoomsOverhead
	if m.Framing == packet.Legacy {
		budget -= packet.LegacyHeaderLen - packet.CompactHeaderLen
	}
	page := ext.Message{Header: packet.Header{Framing: m.Framing, Type: ext.Rooms, Seq: m.Seq, Tick: m.Tick}}
	os.page = os.page[:0]
	// The rooms to look at, in id order: those of the filter's mode only
	// when it names one (an index, built once per table version), else
	// all; from the first after the cursor.
	var at []int
	n := len(rl.rooms)
	if f.Mode != "" {
		at = rl.ofMode(f.Mode)
		n = len(at)
	}
	room := func(i int) *room.Room {
		if at != nil {
			return &rl.rooms[at[i]]
		}
		return &rl.rooms[i]
	}
	start := sort.Search(n, func(i int) bool { return room(i).ID > m.Cursor })
	for i := start; i < n; i++ {
		r := room(i)
		if r.Private || r.Code == "" || !offered(r, local) || !f.Match(r) {
			continue
		}
		e := entryOf(r)
		n := ext.EntryLen(&e)
		if len(os.page) == limit || n > budget {
			page.Next = os.page[len(os.page)-1].ID
			break
		}
		budget -= n
		os.page = append(os.page, e)
	}
	page.Entries = os.page
	out, err := page.Append(b)
	if err != nil { // entries come from the table's rows, which the codec bounds
		page.Entries, page.Next = nil, 0
		out, _ = page.Append(b)
	}
	return out
}

// entryOf is r as an EXT_ROOMS entry.
func entryOf(r *room.Room) ext.Entry {
	return ext.Entry{
		ID: r.ID, Players: uint16(min(r.Occupied(), 0xFFFF)), MaxPlayers: uint16(min(r.MaxPlayers, 0xFFFF)),
		Port: r.Port, State: r.State, Password: r.Password, Code: r.Code,
		Meta: ext.Meta{Name: r.Name, Mode: r.Mode, Map: r.Map, Tags: extTags(r.Tags.Slice())},
	}
}

// metaOf, filterOf and the tag conversions carry what the codec decoded
// into the room model.
func metaOf(m ext.Meta) room.Meta {
	return room.Meta{Name: m.Name, Mode: m.Mode, Map: m.Map, Tags: room.TagsOf(roomTags(m.Tags))}
}

func filterOf(f *ext.Filter) room.Filter {
	return room.Filter{States: f.States, MinFree: int(f.MinFree), Mode: f.Mode, Map: f.Map,
		NamePrefix: f.NamePrefix, Tags: roomTags(f.Tags)}
}

func roomTags(tags []ext.Tag) []room.Tag {
	if len(tags) == 0 {
		return nil
	}
	out := make([]room.Tag, len(tags))
	for i, t := range tags {
		out[i] = room.Tag{Key: t.Key, Value: t.Value}
	}
	return out
}

func extTags(tags []room.Tag) []ext.Tag {
	if len(tags) == 0 {
		return nil
	}
	out := make([]ext.Tag, len(tags))
	for i, t := range tags {
		out[i] = ext.Tag{Key: t.Key, Value: t.Value}
	}
	return out
}
