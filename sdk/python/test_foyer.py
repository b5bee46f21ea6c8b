"""Tests of foyer.py: the shared golden packets, a scripted lobby on a real
socket (retries, timeouts, refusals), and, with FOYER_LOBBY=host:port set,
a real lobby."""

import asyncio
import json
import os
import socket
import struct
import sys
import threading
import time
import unittest
import zlib
from dataclasses import replace

import foyer

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "testdata", "golden.json")) as f:
    GOLDEN = json.load(f)
REQUESTS = {"LIST_ROOMS", "CREATE_ROOM", "JOIN_ROOM"}
EXT_REQUESTS = {"EXT_LIST", "EXT_CREATE", "EXT_JOIN", "EXT_QUICK", "EXT_PRESENT"}


def ext_filter(f):
    if f is None:
        return None
    return foyer.Filter(state=foyer.RoomState(f["states"].bit_length() - 1) if f["states"] else None,
                        free_seats=f["min_free"], mode=f["mode"], map=f["map"], name_prefix=f["name_prefix"],
                        tags=dict(f["tags"]))


def ext_request(g):
    """The ExtMessage golden request g describes."""
    m, meta = g["msg"], g["msg"].get("meta")
    options = None if meta is None else foyer.CreateOptions(
        name=meta["name"], mode=meta["mode"], map=meta["map"], tags=dict(meta["tags"]),
        private=m.get("private", False), password=m.get("password", ""))
    return foyer.ExtMessage(
        foyer.Framing(m["framing"]), foyer.MessageType[m["type"]], m["seq"], tick=m.get("tick", 0),
        token=bytes.fromhex(m.get("token", "")), pad=m.get("pad", 0),
        client=bytes.fromhex(m.get("client", "00" * 8)), filter=ext_filter(m.get("filter")),
        cursor=m.get("cursor", 0), limit=m.get("limit", 0), options=options,
        password="" if options else m.get("password", ""), room=m.get("room", 0), code=m.get("code", ""),
        seat_token=bytes.fromhex(m.get("seat_token", "")))


def ext_reply_fields(m):
    """An ExtMessage reply as golden.json writes it."""
    out = {"framing": m.framing.value, "type": m.type.name, "seq": m.seq}
    rooms = [{"id": r.id, "players": r.players, "max_players": r.max_players, "port": r.port,
              "state": r.state.name.lower(), "password": r.password, "code": r.code, "name": r.name,
              "mode": r.mode, "map": r.map, "tags": [list(t) for t in r.tags.items()]} for r in m.rooms]
    reason = list(foyer.Reason).index(m.reason)
    for k, v in (("tick", m.tick), ("token", m.token.hex()), ("room", m.room), ("code", m.code),
                 ("port", m.port), ("addr", m.address), ("seat_token", m.seat_token.hex()),
                 ("next", m.next), ("entries", rooms), ("reason", reason)):
        if v:
            out[k] = v
    return out


class GoldenTest(unittest.TestCase):
    def test_packets_decode_to_their_fields(self):
        for g in GOLDEN["packets"]:
            with self.subTest(g["name"]):
                m = foyer.decode(bytes.fromhex(g["hex"]))
                self.assertEqual(m.framing.value, g["framing"])
                self.assertEqual(m.type.name, g["type"])
                self.assertEqual((m.seq, m.tick, m.compressed), (g["seq"], g.get("tick", 0), g.get("compressed", False)))
                self.assertEqual((m.room, m.port), (g.get("room", 0), g.get("port", 0)))
                want = [(r["id"], r["players"], r["max_players"], r["port"], r["state"]) for r in g.get("rooms", [])]
                got = [(r.id, r.players, r.max_players, r.port, r.state.name.lower()) for r in m.rooms]
                self.assertEqual(got, want)

    def test_requests_encode_to_their_bytes(self):
        n = 0
        for g in GOLDEN["packets"]:
            if g["type"] not in REQUESTS:
                continue
            b = foyer.encode_request(foyer.MessageType[g["type"]], g["seq"], foyer.Framing(g["framing"]),
                                     tick=g.get("tick", 0), room=g.get("room", 0))
            self.assertEqual(b.hex(), g["hex"], g["name"])
            n += 1
        self.assertGreaterEqual(n, 6)

    def test_malformed_packets_are_refused_for_their_reason(self):
        for g in GOLDEN["malformed"]:
            with self.subTest(g["name"]):
                with self.assertRaises(foyer.MalformedPacket) as e:
                    foyer.decode(bytes.fromhex(g["hex"]))
                self.assertEqual(e.exception.reason, g["reason"])

    def test_extension_requests_encode_to_their_bytes(self):
        n = 0
        for g in GOLDEN["ext"]:
            if g["msg"]["type"] in EXT_REQUESTS:
                self.assertEqual(foyer.encode_ext(ext_request(g)).hex(), g["hex"], g["name"])
                n += 1
        self.assertGreaterEqual(n, 10)

    def test_extension_replies_decode_to_their_fields(self):
        n = 0
        for g in GOLDEN["ext"]:
            if g["msg"]["type"] not in EXT_REQUESTS:
                with self.subTest(g["name"]):
                    b = bytes.fromhex(g["hex"])
                    self.assertEqual(ext_reply_fields(foyer.decode(b)), g["msg"])
                    for i in range(len(b)):
                        with self.assertRaises(foyer.MalformedPacket):
                            foyer.decode(b[:i])
                n += 1
        self.assertGreaterEqual(n, 9)

    def test_malformed_extension_replies_are_refused(self):
        for g in GOLDEN["ext_malformed"]:
            with self.subTest(g["name"]):
                with self.assertRaises(foyer.MalformedPacket) as e:
                    foyer.decode(bytes.fromhex(g["hex"]))
                self.assertEqual(e.exception.reason, g["reason"])

    def test_every_prefix_of_a_packet_is_refused(self):
        for g in GOLDEN["packets"]:
            b = bytes.fromhex(g["hex"])
            for i in range(len(b)):
                with self.assertRaises(foyer.MalformedPacket):
                    foyer.decode(b[:i])


def seq_of(req: bytes) -> int:
    return struct.unpack_from(">H", req, 7 if req[0] == 0xA3 else 2)[0]


def reply(req: bytes, typ: int, payload: bytes = b"") -> bytes:
    """The compact reply to request req: its sequence id echoed."""
    b = struct.pack(">BBHHH", 2, typ, seq_of(req), len(payload), len(payload)) + payload
    return b + struct.pack(">I", zlib.crc32(b))


def ext_token(req: bytes) -> bytes:
    """The retry token a compact extension request echoes."""
    return req[10:10 + req[9]]


SEAT_TOKEN = bytes([1]) + bytes(20) + struct.pack(">I", 1700000000) + bytes(16)


def seat_reply(req: bytes, room: int, addr: bytes = b"") -> bytes:
    return reply(req, 0x83, struct.pack(">BIH", 1, room, 30000) + b"ABCDEF" + bytes([len(addr)]) + addr +
                 bytes([len(SEAT_TOKEN)]) + SEAT_TOKEN)


class ScriptedLobby:
    """A lobby on a real loopback socket that answers each request with
    script(index, request) -> list of datagrams (none: silence). Unless ext,
    it is a seed lobby: it drops extension requests (counted in ext)."""

    def __init__(self, script, ext=False):
        self.ext, self.speaks = [], ext
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.requests = []
        self.script = script
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                b, peer = self.sock.recvfrom(65536)
            except OSError:
                return
            if b[1 if b[0] != 0xA3 else 6] >= 0x80 and not self.speaks:
                self.ext.append(b)
                continue
            self.requests.append(b)
            for out in self.script(len(self.requests) - 1, b):
                self.sock.sendto(out, peer)

    def close(self):
        self.sock.close()


class ScriptedTest(unittest.TestCase):
    def lobby(self, script, ext=False):
        lob = ScriptedLobby(script, ext)
        self.addCleanup(lob.close)
        return lob

    def test_a_retry_reuses_the_sequence_id_and_strays_are_dropped(self):
        def script(i, req):
            if req[1] == 0x40:
                return [reply(req, 0x41, b"\x00\x00")]
            if i == 1:
                return []  # the first JOIN is lost
            stray = bytearray(reply(req, 0x45, struct.pack(">IH", 1, 9)))
            stray[-1] ^= 1  # a bad CRC
            return [bytes(stray), reply(req, 0x45, struct.pack(">IH", 7, 9)),  # another room
                    reply(req, 0x45, struct.pack(">IH", 1, 30000))]
        lob = self.lobby(script)
        with foyer.Client(lob.addr, timeout=0.3) as c:
            seat = c.join(1)
        self.assertEqual((seat.room, seat.address, seat.port), (1, "127.0.0.1", 30000))
        self.assertEqual(len(lob.requests), 3)  # the probe's LIST, then the JOIN twice
        self.assertEqual(lob.requests[1], lob.requests[2])
        self.assertEqual(len(lob.ext), 1)

    def test_join_failed_is_refused(self):
        lob = self.lobby(lambda i, req: [reply(req, 0x41 if req[1] == 0x40 else 0x46, b"\x00\x00"[:2 * (req[1] == 0x40)])])
        with foyer.Client(lob.addr, timeout=0.5) as c:
            with self.assertRaises(foyer.Refused) as e:
                c.join(3)
        self.assertEqual(e.exception.reason, foyer.Reason.UNSPECIFIED)

    def test_silence_is_a_timeout_after_every_attempt(self):
        lob = self.lobby(lambda i, req: [])
        with foyer.Client(lob.addr, timeout=0.05, attempts=3) as c:
            with self.assertRaises(foyer.Timeout):
                c.list()
        self.assertEqual(len(lob.ext), 1)  # the probe, once
        self.assertEqual(len(lob.requests), 4)  # its seed LIST, then LIST three times
        self.assertEqual(len(set(lob.requests[1:])), 1)

    def test_a_closed_port_is_unreachable(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        addr = "127.0.0.1:%d" % s.getsockname()[1]
        s.close()
        with foyer.Client(addr, timeout=1) as c:
            with self.assertRaises(foyer.Unreachable):
                c.list()

    def test_create_lists_first_and_legacy_framing_is_sent(self):
        def script(i, req):
            if req[6] == 0x40:
                return [reply(req, 0x41, b"\x00\x00")]
            return [reply(req, 0x43, struct.pack(">IH", 5, 30005))]
        lob = self.lobby(script)
        with foyer.Client(lob.addr, framing=foyer.Framing.LEGACY, timeout=0.5) as c:
            self.assertEqual(c.create(foyer.CreateOptions(name="ignored by a seed lobby")).room, 5)
        self.assertEqual([foyer.decode(r).type for r in lob.requests],
                         [foyer.MessageType.LIST_ROOMS, foyer.MessageType.LIST_ROOMS, foyer.MessageType.CREATE_ROOM])
        self.assertTrue(all(r[0] == 0xA3 for r in lob.requests + lob.ext))

    def test_a_seed_lobby_says_not_supported_for_what_needs_the_extension(self):
        lob = self.lobby(lambda i, req: [reply(req, 0x41, b"\x00\x00")])
        with foyer.Client(lob.addr, timeout=0.5) as c:
            for call in (lambda: c.join("abcdef"), lambda: c.join(1, password="pw"),
                         lambda: c.create(foyer.CreateOptions(private=True)),
                         lambda: c.list(foyer.Filter(mode="ctf")), lambda: c.quick_join(foyer.Filter(map="dust"))):
                with self.assertRaises(foyer.NotSupported):
                    call()
        self.assertEqual(len(lob.ext), 1)  # asked once, for the client's life

    def test_the_retry_token_is_echoed_and_the_seat_carries_its_token(self):
        joins = []

        def script(i, req):
            if req[1] < 0x80:
                return [reply(req, 0x41, b"\x00\x00")]
            if not ext_token(req):
                self.assertEqual(len(req), foyer.PAD_TO)  # padded until it has a token
                return [reply(req, 0x87, b"\x01\x04tokn")]
            self.assertEqual(ext_token(req), b"tokn")
            if req[1] == 0x84:
                joins.append(req)
                return [] if len(joins) == 1 else [seat_reply(req, 7, bytes([192, 0, 2, 7]))]
            return [reply(req, 0x85, b"\x01\x04")]
        lob = self.lobby(script, ext=True)
        with foyer.Client(lob.addr, timeout=0.3) as c:
            seat = c.join("abcdef")
            with self.assertRaises(foyer.Refused) as e:
                c.create(foyer.CreateOptions(name="x", password="pw"))
        self.assertEqual((seat.room, seat.address, seat.port, seat.code), (7, "192.0.2.7", 30000, "ABCDEF"))
        self.assertEqual((seat.token, seat.expires), (SEAT_TOKEN, 1700000000))
        self.assertEqual(len(joins), 2)
        self.assertEqual(joins[0], joins[1])  # a retry reuses the sequence id
        self.assertEqual(e.exception.reason, foyer.Reason.WRONG_PASSWORD)
        self.assertEqual([r[1] for r in lob.requests], [0x40, 0x80, 0x84, 0x84, 0x82])

    def test_async_quick_join_and_retries_reuse_the_sequence_id(self):
        quick = []

        def script(i, req):
            if req[1] == 0x80:
                return [reply(req, 0x81, b"\x01" + bytes(5))]
            if req[1] == 0x40:
                return []
            quick.append(req)
            return [] if len(quick) == 1 else [seat_reply(req, 9)]

        async def run():
            async with await foyer.AsyncClient.connect(lob.addr, timeout=0.2) as c:
                return await c.quick_join(foyer.Filter(mode="ctf", tags={"region": "eu"}))
        lob = self.lobby(script, ext=True)
        seat = asyncio.run(run())
        self.assertEqual((seat.room, seat.address, seat.code), (9, "127.0.0.1", "ABCDEF"))
        self.assertEqual(len(quick), 2)
        self.assertEqual(quick[0], quick[1])
        self.assertEqual(len(quick[0]), foyer.PAD_TO)  # no token was handed out: padded

    def test_async_falls_back_to_a_seed_lobby(self):
        lob = self.lobby(lambda i, req: [reply(req, 0x41, b"\x00\x00")])

        async def run():
            async with await foyer.AsyncClient.connect(lob.addr, timeout=0.2) as c:
                return await c.list()
        self.assertEqual(asyncio.run(run()), [])
        self.assertEqual((len(lob.ext), len(lob.requests)), (1, 2))


LOBBY = os.environ.get("FOYER_LOBBY", "")


def room_socket(seat, connected=True):
    """A fresh UDP socket for seat's room: connected to it, or bound and
    unconnected, as a game's socket for many peers is."""
    s = socket.socket(socket.AF_INET6 if ":" in seat.address else socket.AF_INET, socket.SOCK_DGRAM)
    if connected:
        s.connect((seat.address, seat.port))
    else:
        s.bind((seat.address, 0))
    return s


def admitted(room):
    """An EXT_ADMITTED for room: the golden one for room 7, its room and CRC
    replaced."""
    golden = next(p for p in GOLDEN["ext"] if p["name"] == "EXT_ADMITTED room 7")
    b = bytes.fromhex(golden["hex"])[:-8] + struct.pack(">I", room)
    return b + struct.pack(">I", zlib.crc32(b))


@unittest.skipUnless(LOBBY, "FOYER_LOBBY=host:port names a running foyer serve")
class LiveTest(unittest.TestCase):
    def test_list_create_join_refusal_in_both_framings(self):
        for framing in foyer.Framing:
            with self.subTest(framing.value):
                with foyer.Client(LOBBY, framing=framing) as a, foyer.Client(LOBBY, framing=framing) as b:
                    seat = a.create()
                    self.assertGreater(seat.port, 0)
                    rooms = b.list(foyer.Filter(state=foyer.RoomState.WAITING))
                    self.assertIn(seat.room, [r.id for r in rooms])
                    joined = b.join(seat.room)
                    self.assertEqual((joined.room, joined.port), (seat.room, seat.port))
                    with self.assertRaises(foyer.Refused):
                        b.join(0xFFFFFFF0)

    def test_extension_name_filter_code_password_quick_join(self):
        for framing in foyer.Framing:
            with self.subTest(framing.value):
                mode = "py%d%s" % (os.getpid(), framing.value[0])  # this run's rooms only
                with foyer.Client(LOBBY, framing=framing) as a, foyer.Client(LOBBY, framing=framing) as b:
                    seat = a.create(foyer.CreateOptions(name="Python night", mode=mode, tags={"sdk": "python"},
                                                        password="pw"))
                    self.assertTrue(seat.code and seat.token and seat.expires > time.time())
                    rooms = b.list(foyer.Filter(mode=mode, name_prefix="Python"))
                    self.assertEqual([(r.id, r.name, r.code, r.password, r.tags) for r in rooms],
                                     [(seat.room, "Python night", seat.code, True, {"sdk": "python"})])
                    self.assertEqual(b.list(foyer.Filter(mode=mode, name_prefix="Go")), [])
                    with self.assertRaises(foyer.Refused) as e:
                        b.join(seat.code.lower(), password="wrong")
                    self.assertEqual(e.exception.reason, foyer.Reason.WRONG_PASSWORD)
                    joined = b.join(seat.code.lower(), password="pw")
                    self.assertEqual((joined.room, joined.port, joined.code), (seat.room, seat.port, seat.code))
                    quick = b.quick_join(foyer.Filter(mode=mode + "q"))
                    self.assertNotEqual(quick.room, seat.room)  # a room with a password is never quick joined
                    self.assertTrue(quick.port and quick.token)

    def test_present_from_a_new_socket_is_admitted(self):
        with foyer.Client(LOBBY) as a:
            seat = a.create()
        for _ in range(2):  # in, and back into the seat from another socket
            with room_socket(seat) as s:
                foyer.present(s, seat, timeout=1)
        for _ in range(2):  # from a socket that is not connected, as a game's often is
            with room_socket(seat, connected=False) as s:
                foyer.present(s, seat, timeout=1)
                with self.assertRaises(OSError):
                    s.getpeername()  # present left it unconnected
        forged = bytearray(seat.token)
        forged[-1] ^= 1  # its signature no longer holds: the door drops it unanswered
        forged = replace(seat, token=bytes(forged))
        with room_socket(seat) as s:
            with self.assertRaises(foyer.Timeout):
                foyer.present(s, forged, timeout=0.3, attempts=2)
        # An unconnected socket takes EXT_ADMITTED from the room's address
        # and port only: another sender's, for the right room, is dropped.
        with room_socket(seat, connected=False) as s, room_socket(seat, connected=False) as other:
            m = foyer.decode(admitted(seat.room))
            self.assertEqual((m.type, m.room), (foyer.MessageType.EXT_ADMITTED, seat.room))  # what a room would send
            done = threading.Event()

            def forge():
                while not done.wait(0.05):
                    other.sendto(admitted(seat.room), s.getsockname())

            forger = threading.Thread(target=forge)
            forger.start()
            try:
                with self.assertRaises(foyer.Timeout):
                    foyer.present(s, forged, timeout=0.3, attempts=2)
            finally:
                done.set()
                forger.join()

    def test_async(self):
        async def run():
            async with await foyer.AsyncClient.connect(LOBBY) as a, await foyer.AsyncClient.connect(LOBBY) as b:
                seat = await a.create()
                joined = await b.join(seat.room)
                self.assertEqual(joined.port, seat.port)
                with self.assertRaises(foyer.Refused) as e:
                    await b.join(0xFFFFFFF0)
                self.assertEqual(e.exception.reason, foyer.Reason.NOT_FOUND)
                quick = await b.quick_join(foyer.Filter(mode="pyasync%d" % os.getpid()))
                self.assertTrue(quick.port and quick.token)
        asyncio.run(run())


def bench(lobby: str, n: int) -> None:
    """Prints the mean round trip of n LISTs and of n JOINs (answered
    EXT_REFUSED) against a real lobby."""
    with foyer.Client(lobby) as c:
        c.list()
        t0 = time.perf_counter_ns()
        for _ in range(n):
            c.list()
        t1 = time.perf_counter_ns()
        for _ in range(n):
            try:
                c.join(0xFFFFFFF0)
            except foyer.Refused:
                pass
        t2 = time.perf_counter_ns()
    print(f"list_ns={(t1 - t0) // n} join_ns={(t2 - t1) // n}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--bench":
        bench(sys.argv[2], int(sys.argv[3]))
    else:
        unittest.main()
