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

import foyer

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "testdata", "golden.json")) as f:
    GOLDEN = json.load(f)
REQUESTS = {"LIST_ROOMS", "CREATE_ROOM", "JOIN_ROOM"}


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

    def test_every_prefix_of_a_packet_is_refused(self):
        for g in GOLDEN["packets"]:
            b = bytes.fromhex(g["hex"])
            for i in range(len(b)):
                with self.assertRaises(foyer.MalformedPacket):
                    foyer.decode(b[:i])


def reply(req: bytes, typ: int, payload: bytes = b"") -> bytes:
    """The compact reply to request req: its sequence id echoed."""
    seq = foyer.decode(req).seq
    b = struct.pack(">BBHHH", 2, typ, seq, len(payload), len(payload)) + payload
    return b + struct.pack(">I", zlib.crc32(b))


class ScriptedLobby:
    """A lobby on a real loopback socket that answers each request with
    script(index, request) -> list of datagrams (none: silence)."""

    def __init__(self, script):
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
            self.requests.append(b)
            for out in self.script(len(self.requests) - 1, b):
                self.sock.sendto(out, peer)

    def close(self):
        self.sock.close()


class ScriptedTest(unittest.TestCase):
    def lobby(self, script):
        lob = ScriptedLobby(script)
        self.addCleanup(lob.close)
        return lob

    def test_a_retry_reuses_the_sequence_id_and_strays_are_dropped(self):
        def script(i, req):
            if i == 0:
                return []  # the first attempt is lost
            stray = bytearray(reply(req, 0x45, struct.pack(">IH", 1, 9)))
            stray[-1] ^= 1  # a bad CRC
            return [bytes(stray), reply(req, 0x45, struct.pack(">IH", 7, 9)),  # another room
                    reply(req, 0x45, struct.pack(">IH", 1, 30000))]
        lob = self.lobby(script)
        with foyer.Client(lob.addr, timeout=0.2) as c:
            seat = c.join(1)
        self.assertEqual((seat.room, seat.address, seat.port), (1, "127.0.0.1", 30000))
        self.assertEqual(len(lob.requests), 2)
        self.assertEqual(lob.requests[0], lob.requests[1])

    def test_join_failed_is_refused(self):
        lob = self.lobby(lambda i, req: [reply(req, 0x46)])
        with foyer.Client(lob.addr, timeout=0.5) as c:
            with self.assertRaises(foyer.Refused) as e:
                c.join(3)
        self.assertEqual(e.exception.reason, foyer.Reason.UNSPECIFIED)

    def test_silence_is_a_timeout_after_every_attempt(self):
        lob = self.lobby(lambda i, req: [])
        with foyer.Client(lob.addr, timeout=0.05, attempts=3) as c:
            with self.assertRaises(foyer.Timeout):
                c.list()
        self.assertEqual(len(lob.requests), 3)
        self.assertEqual(len(set(lob.requests)), 1)

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
            m = foyer.decode(req)
            if m.type == foyer.MessageType.LIST_ROOMS:
                return [reply(req, 0x41, b"\x00\x00")]
            return [reply(req, 0x43, struct.pack(">IH", 5, 30005))]
        lob = self.lobby(script)
        with foyer.Client(lob.addr, framing=foyer.Framing.LEGACY, timeout=0.5) as c:
            self.assertEqual(c.create().room, 5)
        self.assertEqual([foyer.decode(r).type for r in lob.requests],
                         [foyer.MessageType.LIST_ROOMS, foyer.MessageType.CREATE_ROOM])
        self.assertTrue(all(r[0] == 0xA3 for r in lob.requests))

    def test_extension_verbs_say_not_supported(self):
        lob = self.lobby(lambda i, req: [])
        with foyer.Client(lob.addr, timeout=0.05) as c:
            for call in (lambda: c.join("ABCDEF"), lambda: c.quick_join(),
                         lambda: c.create(foyer.CreateOptions(name="x")),
                         lambda: c.list(foyer.Filter(mode="ctf"))):
                with self.assertRaises(foyer.NotSupported):
                    call()
        self.assertEqual(lob.requests, [])

    def test_async_retries_reuse_the_sequence_id(self):
        lob = self.lobby(lambda i, req: [] if i == 0 else [reply(req, 0x41, b"\x00\x00")])

        async def run():
            async with await foyer.AsyncClient.connect(lob.addr, timeout=0.2) as c:
                return await c.list()
        self.assertEqual(asyncio.run(run()), [])
        self.assertEqual(len(lob.requests), 2)
        self.assertEqual(lob.requests[0], lob.requests[1])


LOBBY = os.environ.get("FOYER_LOBBY", "")


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

    def test_async(self):
        async def run():
            async with await foyer.AsyncClient.connect(LOBBY) as a, await foyer.AsyncClient.connect(LOBBY) as b:
                seat = await a.create()
                joined = await b.join(seat.room)
                self.assertEqual(joined.port, seat.port)
                with self.assertRaises(foyer.Refused):
                    await b.join(0xFFFFFFF0)
        asyncio.run(run())


def bench(lobby: str, n: int) -> None:
    """Prints the mean round trip of n LISTs and of n JOINs (answered
    JOIN_FAILED) against a real lobby."""
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
