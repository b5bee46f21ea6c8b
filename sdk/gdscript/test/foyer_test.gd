# Tests of foyer_client.gd, run headless by Godot 3:
#
#     FOYER_GOLDEN=../testdata/golden.json [FOYER_LOBBY=IP:PORT] godot3-server --no-window -s test/foyer_test.gd
#
# The shared golden packets, retries against a silent socket, and with
# FOYER_LOBBY a real lobby: list, create, join, a refusal, both framings.
# With FOYER_BENCH=N too, it then prints the mean round trip of N LISTs and
# of N JOINs (answered JOIN_FAILED) against that lobby.
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
	if lobby != "":
		yield(test_live(lobby), "completed")
	if OS.get_environment("FOYER_BENCH") != "":
		yield(bench(lobby, int(OS.get_environment("FOYER_BENCH"))), "completed")
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
	for p in g.malformed:
		var why = Foyer.decode(hex(p.hex)).malformed
		check(why == p.reason, "%s: refused as '%s', want %s" % [p.name, why, p.reason])


func hex(s: String) -> PoolByteArray:
	var b = PoolByteArray()
	for i in range(0, s.length(), 2):
		b.append(("0x" + s.substr(i, 2)).hex_to_int())
	return b


# A socket that never answers: every attempt is the same datagram, and the
# client times out; the extension's verbs send nothing.
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
	check(got.size() == 3 and got[0] == got[1] and got[1] == got[2], "three attempts, one datagram: %s" % [got])
	for call in [["join", "ABCDEF"], ["quick_join", {}], ["create", {"name": "x"}], ["list", {"mode": "ctf"}]]:
		r = yield(c.call(call[0], call[1]), "completed")
		check(r.error == Foyer.Result.NOT_SUPPORTED, "%s: %d" % [call[0], r.error])
	check(silent.get_available_packet_count() == 0, "an extension verb sent something")
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
		check(r.error == Foyer.Result.REFUSED and r.reason == "unspecified", "framing %d: join a room that is not" % framing)
		a.close()
		b.close()


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
