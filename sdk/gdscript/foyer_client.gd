# A client of Foyer game lobbies for Godot 3 (GDScript): list a lobby's
# rooms, create one or join one, and get a seat: where the room's game
# server listens.
#
# Every verb is a coroutine that waits frame by frame, never blocking the
# game: `var r = yield(lobby.join(42), "completed")`. It returns a
# Dictionary: "error" (a Result), "message", "reason" (why a lobby
# refused), and "rooms" (list) or "seat" (create, join). A request is sent
# up to `attempts` times, `timeout_ms` apart, with the same sequence id, so
# a lobby that already acted on it answers from its retry cache. Replies
# are matched by sequence id; anything else is dropped. One request at a
# time per client. Godot's UDP peer does not report "port unreachable": a
# lobby that is not there is a TIMEOUT.
#
# Foyer's extension (names, filters, codes, passwords, quick join, seat
# tokens) is spoken to a lobby that answers it, as the Go client does: the
# first extension request also lists the seed way, and a lobby that answers
# only that, or nothing within a second, is a seed lobby for the client's
# life; verbs then fall back to the seed messages where they can and
# answer NOT_SUPPORTED where they cannot. The client echoes the retry token
# the lobby hands out (EXT_RETRY) and pads its requests until it has one.
extends Reference

enum Result { OK, TIMEOUT, REFUSED, NOT_SUPPORTED, CLOSED, INVALID }
enum Framing { COMPACT, LEGACY }
enum State { WAITING, COUNTDOWN, PLAYING, FINISHED }

const LIST_ROOMS = 0x40
const ROOM_LIST = 0x41
const CREATE_ROOM = 0x42
const ROOM_CREATED = 0x43
const JOIN_ROOM = 0x44
const JOIN_SUCCESS = 0x45
const JOIN_FAILED = 0x46
const EXT_LIST = 0x80
const EXT_ROOMS = 0x81
const EXT_CREATE = 0x82
const EXT_SEAT = 0x83
const EXT_JOIN = 0x84
const EXT_REFUSED = 0x85
const EXT_QUICK = 0x86
const EXT_RETRY = 0x87
const EXT_PRESENT = 0x88
const EXT_ADMITTED = 0x89
const EXT_MAX_PAYLOAD = 1200 - 8 - 4
const PAD_TO = 64  # a request without a retry token is padded to this length
const PROBE_TIMEOUT_MS = 1000  # the first extension request's wait: then a seed lobby
const PROBE_GRACE_MS = 200  # after a seed answer to the probe, before deciding so
const MAX_PAGES = 4096
const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ"
const REASONS = ["unspecified", "not_found", "full", "started", "wrong_password",
		"quota", "rate_limited", "no_capacity", "draining", "denied"]
const MAX_ROOMS = 5037
const MAGIC = [0xA3, 0x5F, 0xC8, 0x1D]
const STATE_NAMES = ["waiting", "countdown", "playing", "finished"]
# The CRC-32 (IEEE) of each nibble, to take a byte in two steps.
const CRC_NIBBLES = [
	0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC, 0x76DC4190, 0x6B6B51F4, 0x4DB26158, 0x5005713C,
	0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C, 0x9B64C2B0, 0x86D3D2D4, 0xA00AE278, 0xBDBDF21C,
]

var timeout_ms := 5000
var attempts := 3
var framing: int = Framing.COMPACT

var _udp := PacketPeerUDP.new()
var _host := ""
var _port := 0
var _seq := randi() & 0xFFFF
var _answered := false
var _open := false
var _ext := 0  # the lobby speaks the extension: 1; does not: -1; not known yet: 0
var _token := PoolByteArray()  # its retry token
var _id := Crypto.new().generate_random_bytes(8)  # this client's id, which its seat tokens bind


# Opens a socket to the lobby at host (an IP address) and port.
func open(host: String, port: int) -> int:
	_host = host
	_port = port
	var err = _udp.connect_to_host(host, port)
	_open = err == OK
	return err


func close() -> void:
	_udp.close()
	_open = false


# Every room filter matches, page after page: "state" (a State),
# "free_seats", "mode", "map", "name_prefix", "tags" ({key: value}). A
# seed lobby filters by state and free_seats only.
func list(filter := {}):
	var rooms = []
	var cursor = 0
	for _p in range(MAX_PAGES):
		var r = yield(page(filter, cursor, 0), "completed")
		if r.error == Result.NOT_SUPPORTED and _ext < 0:
			r = yield(_seed_list(filter), "completed")
			return r
		if r.error != Result.OK:
			return r
		rooms += r.rooms
		if r.reply.next == 0 or r.reply.next <= cursor:
			break
		cursor = r.reply.next
	var done = _result(Result.OK)
	done.rooms = rooms
	return done


# One page of the rooms filter matches after cursor (0: from the first), at
# most limit (0: as many as fit a datagram); "reply"'s "next" is the next
# page's cursor, 0 after the last. Needs the extension.
func page(filter := {}, cursor := 0, limit := 0):
	var r = yield(_ask({"type": EXT_LIST, "filter": filter, "cursor": cursor, "limit": limit}), "completed")
	return r


func _seed_list(filter: Dictionary):
	if filter.get("mode") or filter.get("map") or filter.get("name_prefix") or filter.get("tags"):
		return _later(Result.NOT_SUPPORTED, "filtering by mode, map, name or tags is not supported by this lobby")
	var r = yield(_do(LIST_ROOMS, 0), "completed")
	if r.error == Result.OK:
		var rooms = []
		for room in r.rooms:
			if (not filter.has("state") or room.state == filter.state) and \
					room.max_players - room.players >= filter.get("free_seats", 0):
				rooms.append(room)
		r.rooms = rooms
	return r


# Starts a room and holds a seat in it: options "name", "mode", "map",
# "tags" ({key: value}), "private", "password". A seed lobby takes none of
# them, and answers NOT_SUPPORTED for private and password.
func create(options := {}):
	var r = yield(_ask({"type": EXT_CREATE, "options": options}), "completed")
	if r.error == Result.NOT_SUPPORTED and _ext < 0 and not options.get("private") and not options.get("password"):
		if not _answered:  # a lobby starts few rooms for senders it never answered
			var l = yield(_do(LIST_ROOMS, 0), "completed")
			if l.error != Result.OK:
				return l
		r = yield(_do(CREATE_ROOM, 0), "completed")
		return _seat(CREATE_ROOM, r)
	return _ext_seat(r)


# Holds a seat in a room: by id (an int), or by code (a String, any case,
# which needs the extension), with its password if it has one.
func join(room, password := ""):
	if typeof(room) == TYPE_STRING:
		var code = room.to_upper()
		if code.length() != 6 or not _code_ok(code.to_ascii()):
			return _later(Result.INVALID, "not a join code (6 letters of %s)" % CODE_ALPHABET)
		var c = yield(_ask({"type": EXT_JOIN, "code": code, "password": password}), "completed")
		return _ext_seat(c)
	var r = yield(_ask({"type": EXT_JOIN, "room": room, "password": password}), "completed")
	if r.error == Result.NOT_SUPPORTED and _ext < 0 and password == "":
		r = yield(_do(JOIN_ROOM, room), "completed")
		return _seat(JOIN_ROOM, r)
	return _ext_seat(r)


# Holds a seat in the fullest joinable room filter matches, or in a new
# one. A seed lobby's fallback tries the fullest room it lists, then
# creates.
func quick_join(filter := {}):
	var r = yield(_ask({"type": EXT_QUICK, "filter": filter}), "completed")
	if not (r.error == Result.NOT_SUPPORTED and _ext < 0):
		return _ext_seat(r)
	r = yield(_seed_list(filter), "completed")
	if r.error != Result.OK:
		return r
	var best = null
	for room in r.rooms:
		if room.state <= State.COUNTDOWN and room.players < room.max_players and (best == null or room.players > best.players):
			best = room
	if best != null:
		var j = yield(_do(JOIN_ROOM, best.id), "completed")
		j = _seat(JOIN_ROOM, j)
		if j.error == Result.OK:
			return j
	r = yield(_do(CREATE_ROOM, 0), "completed")
	return _seat(CREATE_ROOM, r)


# _ask finds out once whether the lobby speaks the extension
# (NOT_SUPPORTED if not), then sends req until the lobby answers it other
# than with a retry token, which it keeps and echoes.
func _ask(req: Dictionary):
	if _ext == 0:
		var p = yield(_send_ext({"type": EXT_LIST, "limit": 1}, int(min(timeout_ms, PROBE_TIMEOUT_MS)), 1, true), "completed")
		if p.error != Result.OK and p.error != Result.TIMEOUT:
			return p
		_ext = 1 if p.error == Result.OK else -1
		if p.error == Result.OK and p.reply.type == EXT_RETRY:
			_token = p.reply.token
	else:
		yield(Engine.get_main_loop(), "idle_frame")
	if _ext < 0:
		return _result(Result.NOT_SUPPORTED, "the lobby does not speak the extension")
	for _k in range(3):
		var r = yield(_send_ext(req, timeout_ms, attempts, false), "completed")
		if r.error != Result.OK:
			return r
		if r.reply.type == EXT_RETRY:
			_token = r.reply.token
			continue
		if r.reply.type == EXT_REFUSED:
			var refused = _result(Result.REFUSED, "lobby refused: " + r.reply.reason)
			refused.reason = r.reply.reason
			return refused
		_answered = true
		return r
	return _result(Result.TIMEOUT, "the lobby asks for a retry token again and again")


# _send_ext sends req with the client's retry token (padded without one)
# and waits for its reply; a probe also lists the seed way.
func _send_ext(req: Dictionary, timeout: int, tries: int, probe: bool):
	_seq = (_seq + 1) & 0xFFFF
	var m = req.duplicate()
	m.framing = framing
	m.seq = _seq
	m.token = _token
	m.client = _id
	var pkt = encode_ext(m)
	if pkt.size() > 0 and _token.size() == 0 and pkt.size() < PAD_TO:
		m.pad = PAD_TO - pkt.size()
		pkt = encode_ext(m)
	if pkt.size() == 0:
		return _later(Result.INVALID, "a field is out of its range")
	var seq = _seq
	var list_seq = -1
	if probe:
		_seq = (_seq + 1) & 0xFFFF
		list_seq = _seq
	var r = yield(_exchange(pkt, seq, m.type, 0, timeout, tries, list_seq), "completed")
	return r


func _ext_seat(r: Dictionary) -> Dictionary:
	if r.error != Result.OK:
		return r
	var t = r.reply.seat_token
	var expires = _u32(t, 21) if t.size() == 41 and t[0] == 1 else 0
	r.seat = {"room": r.reply.room, "address": r.reply.address if r.reply.address != "" else _host,
			"port": r.reply.port, "code": r.reply.code, "token": t, "expires": expires}
	return r


# _later is a coroutine's answer that needs no request: it waits a frame,
# so that every verb can be yielded on alike.
func _later(error: int, message: String):
	yield(Engine.get_main_loop(), "idle_frame")
	return _result(error, message)


func _result(error: int, message := "") -> Dictionary:
	return {"error": error, "message": message, "reason": "", "rooms": [], "seat": {}}


func _seat(request: int, r: Dictionary) -> Dictionary:
	if r.error != Result.OK:
		return r
	if r.reply.type == JOIN_FAILED:
		var hint = "the lobby could not start a room" if request == CREATE_ROOM else "room unknown, full, or not waiting"
		var refused = _result(Result.REFUSED, "lobby answered JOIN_FAILED (%s)" % hint)
		refused.reason = "unspecified"
		return refused
	r.seat = {"room": r.reply.room, "address": _host, "port": r.reply.port, "code": "", "token": PoolByteArray(), "expires": 0}
	return r


static func _answers(request: int, room: int, m: Dictionary) -> bool:
	match request:
		LIST_ROOMS:
			return m.type == ROOM_LIST
		CREATE_ROOM:
			return m.type == ROOM_CREATED or m.type == JOIN_FAILED
		JOIN_ROOM:
			return m.type == JOIN_FAILED or (m.type == JOIN_SUCCESS and m.room == room)
		EXT_LIST:
			return m.type == EXT_ROOMS or m.type == EXT_RETRY or m.type == EXT_REFUSED
	return m.type == EXT_SEAT or m.type == EXT_RETRY or m.type == EXT_REFUSED


func _do(request: int, room: int):
	_seq = (_seq + 1) & 0xFFFF
	var r = yield(_exchange(encode_request(request, _seq, framing, 0, room), _seq, request, room, timeout_ms, attempts, -1), "completed")
	if r.error == Result.OK:
		_answered = true
	return r


# _exchange sends pkt (request, sequence id seq) up to tries times, each
# waiting timeout ms for its reply. With list_seq >= 0 it first sends a seed
# LIST of that sequence id, whose answer leaves the reply PROBE_GRACE_MS
# more: the extension's probe.
func _exchange(pkt: PoolByteArray, seq: int, request: int, room: int, timeout: int, tries: int, list_seq: int):
	if not _open:
		return _later(Result.CLOSED, "client closed")
	if list_seq >= 0:
		_udp.put_packet(encode_request(LIST_ROOMS, list_seq, framing, 0, 0))
	for _attempt in range(tries):
		_udp.put_packet(pkt)
		var deadline = OS.get_ticks_msec() + timeout
		while OS.get_ticks_msec() < deadline:
			yield(Engine.get_main_loop(), "idle_frame")
			if not _open:
				return _result(Result.CLOSED, "client closed")
			while _udp.get_available_packet_count() > 0:
				var m = decode(_udp.get_packet())
				if m.malformed != "":
					continue
				if m.seq == seq and _answers(request, room, m):
					var r = _result(Result.OK)
					r.reply = m
					r.rooms = m.rooms
					return r
				if list_seq >= 0 and m.seq == list_seq and m.type == ROOM_LIST:
					deadline = min(deadline, OS.get_ticks_msec() + PROBE_GRACE_MS)
					list_seq = -1
	return _result(Result.TIMEOUT, "no reply after %d attempts of %d ms" % [tries, timeout])


# Shows seat's token to its room from udp (a PacketPeerUDP, connected or
# not) until the room answers EXT_ADMITTED, tries times at most (0:
# attempts), each waiting timeout ms (0: timeout_ms): the room's door then
# admits the socket's address into the seat, wherever it is (a new socket
# takes the seat back after a drop). A socket connected to seat.address,
# seat.port (connect_to_host) sends there and receives only from there. A
# socket that is not connected stays so: before each attempt present sets
# its destination to the room (set_dest_address(seat.address, seat.port),
# which the game's next put_packet also goes to, so set it again after),
# and takes an answer only from the room's address (compared as IPs, so
# that ::ffff:a.b.c.d is a.b.c.d) and port. It reads udp meanwhile and
# drops what else comes, from the room or any other peer; call it before
# reading udp for the game. "error" is OK, TIMEOUT when no EXT_ADMITTED
# comes (a door drops a token it does not take unanswered), or INVALID for
# a seat without a token (a seed lobby's) or an address that does not
# resolve.
func present(udp: PacketPeerUDP, seat: Dictionary, timeout := 0, tries := 0):
	var token = seat.get("token", PoolByteArray())
	if token.empty():
		return _later(Result.INVALID, "the seat has no token (a seed lobby's)")
	timeout = timeout if timeout > 0 else timeout_ms
	tries = tries if tries > 0 else attempts
	var pkt = encode_ext({"type": EXT_PRESENT, "seq": 0, "seat_token": token})
	var connected = udp.is_connected_to_host()
	var address = str(seat.get("address", ""))
	var port = int(seat.get("port", 0))
	var room_ip = PoolByteArray()
	if not connected:
		room_ip = _ip_bytes(address)
		if room_ip.empty() and address != "":
			room_ip = _ip_bytes(IP.resolve_hostname(address))
		if room_ip.empty():
			return _later(Result.INVALID, "the seat's address %s does not resolve" % address)
	for _attempt in range(tries):
		if not connected and udp.set_dest_address(address, port) != OK:
			var why = "cannot send to the seat's address %s" % address
			return _later(Result.INVALID, why) if _attempt == 0 else _result(Result.INVALID, why)
		udp.put_packet(pkt)
		var deadline = OS.get_ticks_msec() + timeout
		while OS.get_ticks_msec() < deadline:
			yield(Engine.get_main_loop(), "idle_frame")
			while udp.get_available_packet_count() > 0:
				var b = udp.get_packet()
				if not connected and (udp.get_packet_port() != port or _ip_bytes(udp.get_packet_ip()) != room_ip):
					continue  # not from the room
				var m = decode(b)
				if m.malformed == "" and m.type == EXT_ADMITTED and m.room == seat.get("room"):
					return _result(Result.OK)
	return _result(Result.TIMEOUT, "no EXT_ADMITTED after %d attempts of %d ms" % [tries, timeout])


# _ip_bytes is the 16 bytes of an IP address (an IPv4 one as ::ffff:a.b.c.d;
# a zone, "%eth0", left out), or none if s is not one.
static func _ip_bytes(s: String) -> PoolByteArray:
	var zone = s.find("%")
	if zone >= 0:
		s = s.substr(0, zone)
	if not s.is_valid_ip_address():
		return PoolByteArray()
	var b = PoolByteArray()
	if s.find(":") < 0:
		b = PoolByteArray([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF])
		for part in s.split("."):
			b.append(int(part))
		return b
	var tail = PoolByteArray()  # the groups after "::", or of an address without it
	var head = PoolByteArray()
	var halves = s.split("::")
	for h in range(halves.size()):
		var out = PoolByteArray()
		for g in halves[h].split(":", false):
			if g.find(".") >= 0:  # an IPv4 address in the last 32 bits
				for part in g.split("."):
					out.append(int(part))
			else:
				var v = ("0x" + g).hex_to_int()
				out.append(v >> 8)
				out.append(v & 0xFF)
		if h == 0 and halves.size() > 1:
			head = out
		else:
			tail = out
	b = head
	for _i in range(16 - head.size() - tail.size()):
		b.append(0)
	b.append_array(tail)
	return b


# --- codec ------------------------------------------------------------------

static func crc32(b: PoolByteArray, n: int) -> int:
	var c = 0xFFFFFFFF
	for i in range(n):
		c ^= b[i]
		c = CRC_NIBBLES[c & 0xF] ^ (c >> 4)
		c = CRC_NIBBLES[c & 0xF] ^ (c >> 4)
	return c ^ 0xFFFFFFFF


static func _u16(b: PoolByteArray, i: int) -> int:
	return b[i] << 8 | b[i + 1]


static func _u32(b: PoolByteArray, i: int) -> int:
	return b[i] << 24 | b[i + 1] << 16 | b[i + 2] << 8 | b[i + 3]


static func _put(b: PoolByteArray, v: int, n: int) -> PoolByteArray:
	for k in range(n - 1, -1, -1):
		b.append((v >> (8 * k)) & 0xFF)
	return b


# The datagram of a LIST_ROOMS, CREATE_ROOM or JOIN_ROOM (room) request.
static func encode_request(type: int, seq: int, framing_: int, tick: int, room: int) -> PoolByteArray:
	return _frame(type, seq, framing_, tick, _put(PoolByteArray(), room, 4) if type == JOIN_ROOM else PoolByteArray())


static func _frame(type: int, seq: int, framing_: int, tick: int, p: PoolByteArray) -> PoolByteArray:
	var n = p.size()
	var b = PoolByteArray()
	if framing_ == Framing.LEGACY:
		b.append_array(PoolByteArray(MAGIC))
		b = _put(b, 0x010100 | type, 3)
		b = _put(b, seq, 2)
		b = _put(b, tick, 4)
	else:
		b = _put(b, 0x0100 | type, 2)
		b = _put(b, seq, 2)
	b = _put(b, n << 16 | n, 4)
	b.append_array(p)
	return _put(b, crc32(b, b.size()), 4)


static func _holds(t: int, n: int) -> bool:
	if t >= 0x80:
		return n <= EXT_MAX_PAYLOAD
	match t:
		JOIN_ROOM:
			return n == 4
		ROOM_CREATED, JOIN_SUCCESS:
			return n == 6
		ROOM_LIST:
			return n >= 2 and (n - 2) % 11 == 0
	return n == 0


# Checks one datagram in either framing, in the protocol's order: the
# result's "malformed" is "" or the first rule it breaks ("crc", ...). Of
# the extension it reads the lobby's replies; its requests are the lobby's
# to read ("unknown_type" here).
static func decode(b: PoolByteArray) -> Dictionary:
	var m = {"malformed": "", "framing": Framing.COMPACT, "type": 0, "seq": 0, "tick": 0,
			"compressed": false, "room": 0, "port": 0, "rooms": []}
	var legacy = b.size() > 0 and b[0] == 0xA3
	var hl = 17 if legacy else 8
	if b.size() < hl + 4:
		return _bad(m, "short")
	var dir
	var t
	var sizes
	var flagged = false
	if legacy:
		if b[0] != MAGIC[0] or b[1] != MAGIC[1] or b[2] != MAGIC[2] or b[3] != MAGIC[3] or b[4] & 0x7F != 1:
			return _bad(m, "magic")
		m.framing = Framing.LEGACY
		flagged = b[4] & 0x80 != 0
		dir = b[5]
		t = b[6]
		m.seq = _u16(b, 7)
		m.tick = _u32(b, 9)
		sizes = 13
	else:
		dir = b[0]
		t = b[1]
		m.seq = _u16(b, 2)
		sizes = 4
	var n = _u16(b, sizes)
	var original = _u16(b, sizes + 2)
	if b.size() != hl + n + 4:
		return _bad(m, "length")
	if _u32(b, hl + n) != crc32(b, hl + n):
		return _bad(m, "crc")
	if dir != 1 and dir != 2:
		return _bad(m, "packet_type")
	if (t < 0x40 or t > 0x46) and not t in [EXT_ROOMS, EXT_SEAT, EXT_REFUSED, EXT_RETRY, EXT_ADMITTED]:
		return _bad(m, "unknown_type")
	if (dir == 1) != (t == LIST_ROOMS or t == CREATE_ROOM or t == JOIN_ROOM or (t >= 0x80 and t % 2 == 0)):
		return _bad(m, "direction")
	if legacy and not flagged and original == 0:
		original = n  # the original game's encoder leaves it 0
	m.compressed = original > n
	if original < n or (legacy and flagged != m.compressed):
		return _bad(m, "compression")
	var p = b.subarray(hl, hl + n - 1) if n > 0 else PoolByteArray()
	if m.compressed:
		if not _holds(t, original) or original > 255 * n + 16:
			return _bad(m, "compression")
		p = lz4_decompress(p, original)
		if p == null:
			return _bad(m, "compression")
	m.type = t
	if t >= 0x80:
		return _decode_ext(p, m)
	if t == ROOM_LIST:
		if p.size() < 2 or p.size() != 2 + 11 * _u16(p, 0):
			return _bad(m, "payload_size")
		var count = _u16(p, 0)
		if count > MAX_ROOMS:
			return _bad(m, "room_count")
		for i in range(count):
			var e = 2 + 11 * i
			if p[e + 10] > State.FINISHED:
				return _bad(m, "room_state")
			m.rooms.append({"id": _u32(p, e), "players": _u16(p, e + 4), "max_players": _u16(p, e + 6),
					"port": _u16(p, e + 8), "state": p[e + 10], "name": "", "mode": "", "map": "", "tags": {}})
		return m
	if not _holds(t, p.size()):
		return _bad(m, "payload_size")
	if p.size() >= 4:
		m.room = _u32(p, 0)
	if p.size() == 6:
		m.port = _u16(p, 4)
	return m


static func _bad(m: Dictionary, why: String) -> Dictionary:
	m.malformed = why
	return m


# --- the extension --------------------------------------------------------

# _text_ok reports whether b is UTF-8 without control characters.
static func _text_ok(b: PoolByteArray) -> bool:
	var i = 0
	var n = b.size()
	while i < n:
		var c = b[i]
		var size
		if c < 0x80:
			if c < 0x20 or c == 0x7F:
				return false
			i += 1
			continue
		if c >= 0xC2 and c <= 0xDF:
			size = 2
			c &= 0x1F
		elif c >= 0xE0 and c <= 0xEF:
			size = 3
			c &= 0x0F
		elif c >= 0xF0 and c <= 0xF4:
			size = 4
			c &= 0x07
		else:
			return false
		if n - i < size:
			return false
		for k in range(1, size):
			if b[i + k] & 0xC0 != 0x80:
				return false
			c = c << 6 | (b[i + k] & 0x3F)
		if (size == 3 and (c < 0x800 or (c >= 0xD800 and c <= 0xDFFF))) or (size == 4 and (c < 0x10000 or c > 0x10FFFF)) or c < 0xA0:
			return false
		i += size
	return true


static func _key_ok(k: String) -> bool:
	if k.length() < 1 or k.length() > 16:
		return false
	for c in k:
		if "abcdefghijklmnopqrstuvwxyz0123456789_-.".find(c) < 0:
			return false
	return true


static func _code_ok(b: PoolByteArray) -> bool:
	if b.size() != 6:
		return false
	for c in b:
		if CODE_ALPHABET.find(char(c)) < 0:
			return false
	return true


# The writer: "b" the payload's bytes, "bad" once a field is out of range.
static func _wput(w: Dictionary, v: int, n: int) -> void:
	for k in range(n - 1, -1, -1):
		w.b.append((v >> (8 * k)) & 0xFF)


static func _wbytes(w: Dictionary, b: PoolByteArray) -> void:
	for x in b:
		w.b.append(x)


static func _wtext(w: Dictionary, s, most: int) -> void:
	var b = str(s).to_utf8() if s != null else PoolByteArray()
	if b.size() > most or not _text_ok(b):
		w.bad = true
	w.b.append(b.size())
	_wbytes(w, b)


static func _wtags(w: Dictionary, tags) -> void:
	if tags == null:
		tags = {}
	if tags.size() > 4:
		w.bad = true
	w.b.append(tags.size())
	for k in tags:
		if not _key_ok(k):
			w.bad = true
		_wtext(w, k, 16)
		_wtext(w, tags[k], 32)


static func _wfilter(w: Dictionary, f) -> void:
	if f == null:
		f = {}
	var free = f.get("free_seats", 0)
	if free < 0 or free > 255 or (f.has("state") and (f.state < 0 or f.state > State.FINISHED)):
		w.bad = true
	w.b.append(1 << int(f.state) if f.has("state") else 0)
	w.b.append(int(free) & 0xFF)
	_wtext(w, f.get("mode", ""), 16)
	_wtext(w, f.get("map", ""), 32)
	_wtext(w, f.get("name_prefix", ""), 32)
	_wtags(w, f.get("tags", {}))


# The datagram of an extension request (m: "type" EXT_LIST, EXT_CREATE,
# EXT_JOIN, EXT_QUICK, or EXT_PRESENT to a room, "seq", "framing", "tick",
# "token", "pad", "client", "filter", "cursor", "limit", "options",
# "password", "room", "code", "seat_token"); empty if a field is out of
# its range.
static func encode_ext(m: Dictionary) -> PoolByteArray:
	var w = {"b": [1], "bad": false}
	if int(m.type) == EXT_PRESENT:  # to a room: its seat token, never padded
		var seat_token = m.get("seat_token", PoolByteArray())
		if seat_token.empty() or seat_token.size() > 64:
			return PoolByteArray()
		w.b.append(seat_token.size())
		_wbytes(w, seat_token)
		return _frame(EXT_PRESENT, int(m.seq), int(m.get("framing", Framing.COMPACT)), int(m.get("tick", 0)), PoolByteArray(w.b))
	var token = m.get("token", PoolByteArray())
	var client = m.get("client", PoolByteArray([0, 0, 0, 0, 0, 0, 0, 0]))
	if token.size() > 64 or client.size() != 8:
		return PoolByteArray()
	w.b.append(token.size())
	_wbytes(w, token)
	match int(m.type):
		EXT_LIST:
			_wput(w, int(m.get("cursor", 0)), 4)
			w.b.append(int(m.get("limit", 0)) & 0xFF)
			_wfilter(w, m.get("filter", {}))
		EXT_CREATE:
			var o = m.get("options", {})
			_wbytes(w, client)
			w.b.append(1 if o.get("private", false) else 0)
			_wtext(w, o.get("name", ""), 32)
			_wtext(w, o.get("mode", ""), 16)
			_wtext(w, o.get("map", ""), 32)
			_wtags(w, o.get("tags", {}))
			_wtext(w, o.get("password", ""), 64)
		EXT_JOIN:
			var code = m.get("code", "")
			var room = int(m.get("room", 0))
			if (room == 0) == (code == "") or (code != "" and not _code_ok(code.to_ascii())):
				return PoolByteArray()
			_wbytes(w, client)
			_wput(w, room, 4)
			w.b.append(6 if code != "" else 0)
			_wbytes(w, code.to_ascii())
			_wtext(w, m.get("password", ""), 64)
		EXT_QUICK:
			_wbytes(w, client)
			_wfilter(w, m.get("filter", {}))
		_:
			return PoolByteArray()
	for _i in range(int(m.get("pad", 0))):
		w.b.append(0)
	if w.bad or w.b.size() > EXT_MAX_PAYLOAD:
		return PoolByteArray()
	return _frame(int(m.type), int(m.seq), int(m.get("framing", Framing.COMPACT)), int(m.get("tick", 0)), PoolByteArray(w.b))


# The reader: "p" the payload, "i" where it is, "err" its first fault.
static func _take(r: Dictionary, k: int):
	if r.err != "":
		return null
	if k > r.p.size() - r.i:
		r.err = "ext_short"
		return null
	r.i += k
	return r.p.subarray(r.i - k, r.i - 1) if k > 0 else PoolByteArray()


static func _rint(r: Dictionary, n: int) -> int:
	var b = _take(r, n)
	var v = 0
	if b != null:
		for x in b:
			v = v << 8 | x
	return v


static func _rcheck(r: Dictionary, ok: bool) -> void:
	if r.err == "" and not ok:
		r.err = "ext_field"


static func _rtext(r: Dictionary, most: int) -> String:
	var b = _take(r, _rint(r, 1))
	if b == null:
		return ""
	_rcheck(r, b.size() <= most and _text_ok(b))
	return b.get_string_from_utf8() if r.err == "" else ""


static func _rcode(r: Dictionary) -> String:
	var b = _take(r, 6)
	if b == null:
		return ""
	_rcheck(r, _code_ok(b))
	return b.get_string_from_ascii() if r.err == "" else ""


static func _rblob(r: Dictionary) -> PoolByteArray:
	var n = _rint(r, 1)
	_rcheck(r, n <= 64)
	var b = _take(r, n)
	return b if b != null else PoolByteArray()


static func _rtags(r: Dictionary) -> Dictionary:
	var n = _rint(r, 1)
	_rcheck(r, n <= 4)
	var tags = {}
	for _i in range(n):
		if r.err != "":
			break
		var k = _rtext(r, 16)
		var v = _rtext(r, 32)
		_rcheck(r, _key_ok(k) and not tags.has(k))
		tags[k] = v
	return tags


static func _decode_ext(p: PoolByteArray, m: Dictionary) -> Dictionary:
	var r = {"p": p, "i": 0, "err": ""}
	m.token = PoolByteArray()
	m.seat_token = PoolByteArray()
	m.code = ""
	m.address = ""
	m.next = 0
	m.reason = "unspecified"
	if _rint(r, 1) != 1 and r.err == "":
		return _bad(m, "ext_version")
	match m.type:
		EXT_ROOMS:
			m.next = _rint(r, 4)
			var count = _rint(r, 1)
			for _i in range(count):
				if r.err != "":
					break
				if r.p.size() - r.i < 22:  # count is backed before it is read
					r.err = "ext_short"
					break
				var e = {"id": _rint(r, 4), "players": _rint(r, 2), "max_players": _rint(r, 2), "port": _rint(r, 2),
						"state": _rint(r, 1)}
				var flags = _rint(r, 1)
				_rcheck(r, e.state <= State.FINISHED and flags & ~1 == 0)
				e.password = flags == 1
				e.code = _rcode(r)
				e.name = _rtext(r, 32)
				e.mode = _rtext(r, 16)
				e.map = _rtext(r, 32)
				e.tags = _rtags(r)
				m.rooms.append(e)
		EXT_SEAT:
			m.room = _rint(r, 4)
			m.port = _rint(r, 2)
			m.code = _rcode(r)
			var n = _rint(r, 1)
			var a = _take(r, n)
			if a != null:
				var v4in6 = n == 16 and a.subarray(0, 11) == PoolByteArray([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF])
				_rcheck(r, n == 0 or n == 4 or (n == 16 and not v4in6))
				if r.err == "" and n == 4:
					m.address = "%d.%d.%d.%d" % [a[0], a[1], a[2], a[3]]
				elif r.err == "" and n == 16:
					var groups = []
					for k in range(8):
						groups.append("%x" % (a[2 * k] << 8 | a[2 * k + 1]))
					m.address = PoolStringArray(groups).join(":")
			m.seat_token = _rblob(r)
		EXT_REFUSED:
			var why = _rint(r, 1)
			m.reason = REASONS[why] if why < REASONS.size() else "unspecified"
		EXT_ADMITTED:
			m.room = _rint(r, 4)
		_:  # EXT_RETRY
			m.token = _rblob(r)
			_rcheck(r, m.token.size() > 0)
	if r.err != "":
		return _bad(m, r.err)
	if r.i != p.size():
		return _bad(m, "ext_trailing")
	return m


# Inflates one LZ4 block (no frame) to exactly size bytes, or null.
static func lz4_decompress(src: PoolByteArray, size: int):
	var out = PoolByteArray()
	out.resize(size)
	var i = 0
	var o = 0
	var n = src.size()
	while true:
		if i >= n:
			return null
		var token = src[i]
		i += 1
		var lit = token >> 4
		if lit == 15:
			while true:
				if i >= n:
					return null
				lit += src[i]
				i += 1
				if src[i - 1] != 255:
					break
		if lit > n - i or lit > size - o:
			return null
		for k in range(lit):
			out[o + k] = src[i + k]
		i += lit
		o += lit
		if i == n:
			break  # the last sequence is literals only
		if n - i < 2:
			return null
		var off = src[i] | src[i + 1] << 8
		i += 2
		var ml = token & 15
		if ml == 15:
			while true:
				if i >= n:
					return null
				ml += src[i]
				i += 1
				if src[i - 1] != 255:
					break
		ml += 4
		if off == 0 or off > o or ml > size - o:
			return null
		for _k in range(ml):  # a match may overlap what it writes
			out[o] = out[o - off]
			o += 1
	if o != size:
		return null
	return out
