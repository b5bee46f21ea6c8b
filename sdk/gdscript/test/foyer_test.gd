# Tests of foyer_client.gd, run headless by Godot 3:
#
#     FOYER_GOLDEN=../testdata/golden.json [FOYER_LOBBY=IP:PORT] godot3-server --no-window -s test/foyer_test.gd
#
# The shared golden packets, retries against a silent socket, and with
# FOYER_LOBBY a real lobby: list, create, join, a refusal, both framings,
# and the extension's names, filters, codes, passwords, reasons and quick
# join, and a seat token presented to its room from new sockets, connected
# or not. With FOYER_BENCH=N too, it prints instead of the live tests the
# mean round trip of N EXT_LISTs and of N EXT_JOINs (answered EXT_REFUSED)
# against that lobby.
extends SceneTree

var Foyer = load(get_script().resource_path.get_base_dir() + "/../foyer_client.gd")
var checks := 0
var failures := 0


func check(ok: bool, what: String) -> void:
	checks += 1
	if not ok:
		failures += 1
		printerr("FAIL: ", what)


func _init():
	call_deferred("run")


func run():
	test_golden()
	yield(test_silence(), "completed")
	var lobby = OS.get_environment("FOYER_LOBBY")
	if OS.get_environment("FOYER_BENCH") != "":
		yield(bench(lobby, int(OS.get_environment("FOYER_BENCH"))), "completed")
	elif lobby != "":
		yield(test_live(lobby), "completed")
		yield(test_live_present(lobby), "completed")
	print("%d passed, %d failed" % [checks - failures, failures])
	quit(0 if failures == 0 else 1)


func test_golden() -> void:
	var f = File.new()
	check(f.open(OS.get_environment("FOYER_GOLDEN"), File.READ) == OK, "open FOYER_GOLDEN")
	var g = JSON.parse(f.get_as_text()).result
	f.close()
	var types = ["LIST_ROOMS", "ROOM_LIST", "CREATE_ROOM", "ROOM_CREATED", "JOIN_ROOM", "JOIN_SUCCESS", "JOIN_FAILED"]
	var encoded = 0
	for p in g.packets:
		var b = hex(p.hex)
		var m = Foyer.decode(b)
		check(m.malformed == "", "%s: refused: %s" % [p.name, m.malformed])
		if m.malformed != "":
			continue
		check(types[m.type - 0x40] == p.type and ["compact", "legacy"][m.framing] == p.framing, p.name + ": type or framing")
		check(m.seq == p.seq and m.tick == p.get("tick", 0) and m.compressed == p.get("compressed", false), p.name + ": seq, tick or compressed")
		check(m.room == p.get("room", 0) and m.port == p.get("port", 0), p.name + ": room or port")
		var want = p.get("rooms", [])
		check(m.rooms.size() == want.size(), p.name + ": room count")
		for i in range(min(want.size(), m.rooms.size())):
			var r = m.rooms[i]
			check(r.id == want[i].id and r.players == want[i].players and r.max_players == want[i].max_players and \
					r.port == want[i].port and Foyer.STATE_NAMES[r.state] == want[i].state, "%s: room %d" % [p.name, i])
		if m.type in [Foyer.LIST_ROOMS, Foyer.CREATE_ROOM, Foyer.JOIN_ROOM]:
			var again = Foyer.encode_request(m.type, int(p.seq), m.framing, int(p.get("tick", 0)), int(p.get("room", 0)))
			check(again.hex_encode() == p.hex, p.name + ": encodes to " + again.hex_encode())
			encoded += 1
		for cut in range(b.size()):
			check(Foyer.decode(b.subarray(0, cut - 1) if cut > 0 else PoolByteArray()).malformed != "", "%s: prefix %d decodes" % [p.name, cut])
	check(encoded >= 6, "requests encoded: %d" % encoded)
	for p in g.malformed + g.ext_malformed:
		var why = Foyer.decode(hex(p.hex)).malformed
		check(why == p.reason, "%s: refused as '%s', want %s" % [p.name, why, p.reason])
	test_ext_golden(g)


func tags_of(pairs: Array) -> Dictionary:
	var t = {}
	for kv in pairs:
		t[kv[0]] = kv[1]
	return t


func test_ext_golden(g: Dictionary) -> void:
	var names = ["EXT_LIST", "EXT_ROOMS", "EXT_CREATE", "EXT_SEAT", "EXT_JOIN", "EXT_REFUSED", "EXT_QUICK", "EXT_RETRY",
			"EXT_PRESENT", "EXT_ADMITTED"]
	var encoded = 0
	var decoded = 0
	for p in g.ext:
		var m = p.msg
		var t = 0x80 + names.find(m.type)
		if t % 2 == 0:
			var req = {"type": t, "seq": int(m.seq), "framing": Foyer.Framing.LEGACY if m.framing == "legacy" else Foyer.Framing.COMPACT,
					"tick": int(m.get("tick", 0)), "token": hex(m.get("token", "")), "pad": int(m.get("pad", 0)),
					"client": hex(m.get("client", "0000000000000000")), "cursor": int(m.get("cursor", 0)),
					"limit": int(m.get("limit", 0)), "room": int(m.get("room", 0)), "code": m.get("code", ""),
					"password": m.get("password", ""), "seat_token": hex(m.get("seat_token", ""))}
			if m.has("filter"):
				var f = m.filter
				req.filter = {"free_seats": int(f.min_free), "mode": f.mode, "map": f.map, "name_prefix": f.name_prefix,
						"tags": tags_of(f.tags)}
				if int(f.states) != 0:
					req.filter.state = int(log(f.states) / log(2) + 0.5)
			if m.has("meta"):
				req.options = {"name": m.meta.name, "mode": m.meta.mode, "map": m.meta.map, "tags": tags_of(m.meta.tags),
						"private": m.get("private", false), "password": m.get("password", "")}
			var again = Foyer.encode_ext(req).hex_encode()
			check(again == p.hex, p.name + ": encodes to " + again)
			encoded += 1
			continue
		var b = hex(p.hex)
		var d = Foyer.decode(b)
		check(d.malformed == "", "%s: refused: %s" % [p.name, d.malformed])
		if d.malformed != "":
			continue
		decoded += 1
		check(d.type == t and ["compact", "legacy"][d.framing] == m.framing and d.seq == m.seq and d.tick == m.get("tick", 0), p.name + ": header")
		check(d.token.hex_encode() == m.get("token", "") and d.seat_token.hex_encode() == m.get("seat_token", ""), p.name + ": tokens")
		check(d.room == m.get("room", 0) and d.port == m.get("port", 0) and d.code == m.get("code", "") and \
				d.address == m.get("addr", "") and d.next == m.get("next", 0) and \
				Foyer.REASONS.find(d.reason) == m.get("reason", 0), p.name + ": fields")
		var want = m.get("entries", [])
		check(d.rooms.size() == want.size(), p.name + ": entries")
		for i in range(min(want.size(), d.rooms.size())):
			var r = d.rooms[i]
			var w = want[i]
			check(r.id == w.id and r.players == w.players and r.max_players == w.max_players and r.port == w.port and \
					Foyer.STATE_NAMES[r.state] == w.state and r.password == w.password and r.code == w.code and \
					r.name == w.name and r.mode == w.mode and r.map == w.map and r.tags.hash() == tags_of(w.tags).hash(),
					"%s: entry %d" % [p.name, i])
		for cut in range(b.size()):
			check(Foyer.decode(b.subarray(0, cut - 1) if cut > 0 else PoolByteArray()).malformed != "", "%s: prefix %d decodes" % [p.name, cut])
	check(encoded >= 10 and decoded >= 9, "extension goldens: %d encoded, %d decoded" % [encoded, decoded])


func hex(s: String) -> PoolByteArray:
	var b = PoolByteArray()
	for i in range(0, s.length(), 2):
		b.append(("0x" + s.substr(i, 2)).hex_to_int())
	return b


# A socket that never answers: the extension's probe (a seed LIST and a
# padded EXT_LIST), then every attempt is the same datagram, and the
# client times out; what needs the extension sends nothing more.
func test_silence():
	var silent = PacketPeerUDP.new()
	var port = 0
	for p in range(47000, 47100):
		if silent.listen(p, "127.0.0.1") == OK:
			port = p
			break
	var c = Foyer.new()
	c.timeout_ms = 50
	c.open("127.0.0.1", port)
	var r = yield(c.list(), "completed")
	check(r.error == Foyer.Result.TIMEOUT, "silence: %d" % r.error)
	var got = []
	while silent.get_available_packet_count() > 0:
		got.append(silent.get_packet().hex_encode())
	check(got.size() == 5 and got[0].length() == 24 and got[1].length() == 2 * Foyer.PAD_TO and
			got[2] == got[3] and got[3] == got[4], "the probe, then three attempts of one datagram: %s" % [got])
	for call in [["join", "abcdef"], ["quick_join", {"mode": "ctf"}], ["create", {"private": true}], ["list", {"mode": "ctf"}]]:
		r = yield(c.call(call[0], call[1]), "completed")
		check(r.error == Foyer.Result.NOT_SUPPORTED, "%s: %d" % [call[0], r.error])
	check(silent.get_available_packet_count() == 0, "a seed lobby was asked twice, or an extension verb sent something")
	c.close()
	silent.close()


func test_live(lobby: String):
	yield(self, "idle_frame")
	var at = lobby.rfind(":")
	for framing in [Foyer.Framing.COMPACT, Foyer.Framing.LEGACY]:
		var a = Foyer.new()
		var b = Foyer.new()
		a.framing = framing
		b.framing = framing
		a.open(lobby.substr(0, at), int(lobby.substr(at + 1)))
		b.open(lobby.substr(0, at), int(lobby.substr(at + 1)))
		var r = yield(a.create(), "completed")
		check(r.error == Foyer.Result.OK and r.seat.port > 0, "framing %d: create: %s" % [framing, r.message])
		var seat = r.seat
		r = yield(b.list({"state": Foyer.State.WAITING}), "completed")
		var listed = false
		for room in r.rooms:
			listed = listed or room.id == seat.get("room", -1)
		check(r.error == Foyer.Result.OK and listed, "framing %d: room listed" % framing)
		r = yield(b.join(seat.get("room", 0)), "completed")
		check(r.error == Foyer.Result.OK and r.seat.get("port") == seat.get("port"), "framing %d: join: %s" % [framing, r.message])
		r = yield(b.join(0xFFFFFFF0), "completed")
		check(r.error == Foyer.Result.REFUSED and r.reason == "not_found", "framing %d: join a room that is not" % framing)
		var mode = "gd%d%d" % [OS.get_process_id(), framing]  # this run's rooms only
		r = yield(a.create({"name": "Godot night", "mode": mode, "tags": {"sdk": "gdscript"}, "password": "pw"}), "completed")
		check(r.error == Foyer.Result.OK and r.seat.code.length() == 6 and r.seat.token.size() > 0 and r.seat.expires > OS.get_unix_time(),
				"framing %d: create a named room: %s" % [framing, r.message])
		var named = r.seat
		r = yield(b.list({"mode": mode, "name_prefix": "Godot"}), "completed")
		check(r.error == Foyer.Result.OK and r.rooms.size() == 1 and r.rooms[0].id == named.get("room") and \
				r.rooms[0].name == "Godot night" and r.rooms[0].code == named.get("code") and r.rooms[0].password and \
				r.rooms[0].tags.hash() == {"sdk": "gdscript"}.hash(), "framing %d: list by a filter: %s" % [framing, r.rooms])
		r = yield(b.list({"mode": mode, "name_prefix": "Unity"}), "completed")
		check(r.error == Foyer.Result.OK and r.rooms.empty(), "framing %d: a filter that finds none: %s" % [framing, r])
		r = yield(b.join(named.get("code", "").to_lower(), "wrong"), "completed")
		check(r.error == Foyer.Result.REFUSED and r.reason == "wrong_password", "framing %d: a wrong password: %s" % [framing, r.reason])
		r = yield(b.join(named.get("code", "").to_lower(), "pw"), "completed")
		check(r.error == Foyer.Result.OK and r.seat.room == named.get("room") and r.seat.port == named.get("port"),
				"framing %d: join by code: %s" % [framing, r.message])
		r = yield(b.quick_join({"mode": mode + "q"}), "completed")
		check(r.error == Foyer.Result.OK and r.seat.room != named.get("room") and r.seat.token.size() > 0,
				"framing %d: quick join: %s" % [framing, r.message])
		a.close()
		b.close()


# room_socket is a fresh socket connected to seat's room.
func room_socket(seat: Dictionary) -> PacketPeerUDP:
	var udp = PacketPeerUDP.new()
	check(udp.connect_to_host(seat.address, seat.port) == OK, "connect to the room")
	return udp


# bound_socket is a fresh socket bound to a free port of bind_address (of
# 127.0.0.1 if none binds), not connected: "udp", and its "port".
func bound_socket(bind_address: String) -> Dictionary:
	var udp = PacketPeerUDP.new()
	for address in [bind_address, "127.0.0.1"]:
		for p in range(47100, 47400):
			if udp.listen(p, address) == OK:
				return {"udp": udp, "port": p}
	check(false, "bind a socket to " + bind_address)
	return {"udp": udp, "port": 0}


# forge sends pkt from udp every 50 ms while state.on, counting in
# state.sent.
func forge(udp: PacketPeerUDP, pkt: PoolByteArray, state: Dictionary):
	while state.on:
		udp.put_packet(pkt)
		state.sent += 1
		var next = OS.get_ticks_msec() + 50
		while state.on and OS.get_ticks_msec() < next:
			yield(self, "idle_frame")


# A seat token shown to the room from a fresh connected socket is admitted,
# twice (in, and back into the seat from another socket), and from a bound
# socket that is not connected, IPv4 and IPv6 (the room's IPv4 address
# mapped), which stays so; a forged one is not, from a connected socket,
# nor from one that is not connected while another socket sends it a
# well-formed EXT_ADMITTED for the seat's room.
func test_live_present(lobby: String):
	yield(self, "idle_frame")
	var at = lobby.rfind(":")
	var a = Foyer.new()
	a.open(lobby.substr(0, at), int(lobby.substr(at + 1)))
	var r = yield(a.create(), "completed")
	a.close()
	check(r.error == Foyer.Result.OK and r.seat.token.size() > 0, "create: %s" % r.message)
	var seat = r.seat
	for k in range(2):
		var udp = room_socket(seat)
		r = yield(a.present(udp, seat, 1000), "completed")
		check(r.error == Foyer.Result.OK, "present %d: %s" % [k, r.message])
		udp.close()
	for bind_address in ["127.0.0.1", "*"]:
		var s = bound_socket(bind_address)
		r = yield(a.present(s.udp, seat, 1000), "completed")
		check(r.error == Foyer.Result.OK, "present from a socket bound to %s, not connected: %s" % [bind_address, r.message])
		check(not s.udp.is_connected_to_host(), "present connected the socket bound to " + bind_address)
		s.udp.close()
	var forged = PoolByteArray(seat.token)
	forged[forged.size() - 1] ^= 1  # its signature no longer holds: the door drops it unanswered
	var bad = seat.duplicate()
	bad.token = forged
	var udp = room_socket(seat)
	r = yield(a.present(udp, bad, 300, 2), "completed")
	check(r.error == Foyer.Result.TIMEOUT, "a forged token: %s" % r.message)
	udp.close()
	# golden "EXT_ADMITTED room 7", for the seat's room
	var admitted = hex("02890000000500050100000007296f857c")
	for k in range(4):
		admitted[9 + k] = (seat.room >> (24 - 8 * k)) & 0xFF
	var crc = Foyer.crc32(admitted, 13)
	for k in range(4):
		admitted[13 + k] = (crc >> (24 - 8 * k)) & 0xFF
	var m = Foyer.decode(admitted)
	check(m.malformed == "" and m.type == Foyer.EXT_ADMITTED and m.room == seat.room, "the EXT_ADMITTED forged: %s" % m)
	var s = bound_socket("127.0.0.1")
	var forger = PacketPeerUDP.new()
	check(forger.set_dest_address("127.0.0.1", s.port) == OK, "the forger's destination")
	var forging = {"on": true, "sent": 0}
	var f = forge(forger, admitted, forging)
	r = yield(a.present(s.udp, bad, 300, 2), "completed")
	forging.on = false
	yield(f, "completed")
	check(r.error == Foyer.Result.TIMEOUT and forging.sent >= 5,
			"a forged token from a socket not connected, with EXT_ADMITTED from another (%d sent): %s" % [forging.sent, r.message])
	forger.close()
	s.udp.close()


func bench(lobby: String, n: int):
	var at = lobby.rfind(":")
	var c = Foyer.new()
	c.open(lobby.substr(0, at), int(lobby.substr(at + 1)))
	yield(c.list(), "completed")
	var t0 = OS.get_ticks_usec()
	for _i in range(n):
		check((yield(c.list(), "completed")).error == Foyer.Result.OK, "bench list")
	var t1 = OS.get_ticks_usec()
	for _i in range(n):
		check((yield(c.join(0xFFFFFFF0), "completed")).error == Foyer.Result.REFUSED, "bench join")
	var t2 = OS.get_ticks_usec()
	c.close()
	print("list_ns=%d join_ns=%d" % [(t1 - t0) * 1000 / n, (t2 - t1) * 1000 / n])
