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
extends Reference

enum Result { OK, TIMEOUT, REFUSED, NOT_SUPPORTED, CLOSED }
enum Framing { COMPACT, LEGACY }
enum State { WAITING, COUNTDOWN, PLAYING, FINISHED }

const LIST_ROOMS = 0x40
const ROOM_LIST = 0x41
const CREATE_ROOM = 0x42
const ROOM_CREATED = 0x43
const JOIN_ROOM = 0x44
const JOIN_SUCCESS = 0x45
const JOIN_FAILED = 0x46
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


# The lobby's rooms that filter matches: "state" (a State) and
# "free_seats" are applied here; "mode", "map", "name_prefix" and "tags"
# need Foyer's protocol extension.
func list(filter := {}):
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


# Starts a room and holds a seat in it; room options (name, mode, map,
# tags, private, password) need the extension.
func create(options := {}):
	if not options.empty():
		return _later(Result.NOT_SUPPORTED, "room options are not supported by this lobby")
	if not _answered:  # a lobby starts few rooms for senders it never answered
		var l = yield(_do(LIST_ROOMS, 0), "completed")
		if l.error != Result.OK:
			return l
	var r = yield(_do(CREATE_ROOM, 0), "completed")
	return _seat(CREATE_ROOM, r)


# Holds a seat in a room: by id (an int), or by code (a String, which
# needs the extension).
func join(room):
	if typeof(room) == TYPE_STRING:
		return _later(Result.NOT_SUPPORTED, "joining by code is not supported by this lobby")
	var r = yield(_do(JOIN_ROOM, room), "completed")
	return _seat(JOIN_ROOM, r)


# Joins the fullest room filter matches, or creates one: needs the extension.
func quick_join(_filter := {}):
	return _later(Result.NOT_SUPPORTED, "quick join is not supported by this lobby")


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
	r.seat = {"room": r.reply.room, "address": _host, "port": r.reply.port, "token": PoolByteArray(), "expires": 0}
	return r


static func _answers(request: int, room: int, m: Dictionary) -> bool:
	match request:
		LIST_ROOMS:
			return m.type == ROOM_LIST
		CREATE_ROOM:
			return m.type == ROOM_CREATED or m.type == JOIN_FAILED
	return m.type == JOIN_FAILED or (m.type == JOIN_SUCCESS and m.room == room)


func _do(request: int, room: int):
	if not _open:
		return _later(Result.CLOSED, "client closed")
	_seq = (_seq + 1) & 0xFFFF
	var pkt = encode_request(request, _seq, framing, 0, room)
	for _attempt in range(attempts):
		_udp.put_packet(pkt)
		var deadline = OS.get_ticks_msec() + timeout_ms
		while OS.get_ticks_msec() < deadline:
			yield(Engine.get_main_loop(), "idle_frame")
			if not _open:
				return _result(Result.CLOSED, "client closed")
			while _udp.get_available_packet_count() > 0:
				var m = decode(_udp.get_packet())
				if m.malformed == "" and m.seq == _seq and _answers(request, room, m):
					_answered = true
					var r = _result(Result.OK)
					r.reply = m
					r.rooms = m.rooms
					return r
	return _result(Result.TIMEOUT, "no reply after %d attempts of %d ms" % [attempts, timeout_ms])


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
	var n = 4 if type == JOIN_ROOM else 0
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
	if n:
		b = _put(b, room, 4)
	return _put(b, crc32(b, b.size()), 4)


static func _holds(t: int, n: int) -> bool:
	match t:
		JOIN_ROOM:
			return n == 4
		ROOM_CREATED, JOIN_SUCCESS:
			return n == 6
		ROOM_LIST:
			return n >= 2 and (n - 2) % 11 == 0
	return n == 0


# Checks one datagram in either framing, in the protocol's order: the
# result's "malformed" is "" or the first rule it breaks ("crc", ...).
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
	if t < 0x40 or t > 0x46:
		return _bad(m, "unknown_type")
	if (dir == 1) != (t == LIST_ROOMS or t == CREATE_ROOM or t == JOIN_ROOM):
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
