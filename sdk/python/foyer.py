"""A client of Foyer lobbies, on the standard library alone.

A game, a bot or a test lists a lobby's rooms, creates one or joins one,
and gets back a seat: where the room's game server listens. Client is
blocking; AsyncClient is the same on asyncio. Both send each request up to
`attempts` times, `timeout` seconds apart, with the same sequence id, so a
lobby that already acted on it answers from its retry cache instead of
acting twice. Replies are matched by sequence id; anything else that
reaches the socket (stray or malformed datagrams, bad CRCs) is dropped.

Errors are typed: Timeout, Refused (with a Reason), Unreachable,
NotSupported, Closed, all FoyerError. The native protocol (both framings,
LZ4-compressed lists) is in encode_request and decode.
"""

from __future__ import annotations

import asyncio
import builtins
import enum
import random
import socket
import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

__all__ = [
    "Client", "AsyncClient", "Room", "Seat", "Filter", "CreateOptions",
    "Framing", "MessageType", "RoomState", "Reason", "Message",
    "FoyerError", "Timeout", "Refused", "Unreachable", "NotSupported", "Closed",
    "MalformedPacket", "encode_request", "decode", "lz4_decompress",
]

DEFAULT_TIMEOUT = 5.0
DEFAULT_ATTEMPTS = 3
MAX_ROOMS = 5037
REFUSED_PAUSE = 0.25  # after "port unreachable", before trying again


class Framing(enum.Enum):
    """The header a datagram uses: 8 bytes, or the original game's 17."""
    COMPACT = "compact"
    LEGACY = "legacy"


class MessageType(enum.IntEnum):
    LIST_ROOMS = 0x40
    ROOM_LIST = 0x41
    CREATE_ROOM = 0x42
    ROOM_CREATED = 0x43
    JOIN_ROOM = 0x44
    JOIN_SUCCESS = 0x45
    JOIN_FAILED = 0x46


class RoomState(enum.IntEnum):
    WAITING = 0
    COUNTDOWN = 1
    PLAYING = 2
    FINISHED = 3


class Reason(enum.Enum):
    """Why a lobby refused. A seed lobby never says: UNSPECIFIED."""
    UNSPECIFIED = "unspecified"
    NOT_FOUND = "not_found"
    FULL = "full"
    STARTED = "started"
    WRONG_PASSWORD = "wrong_password"
    QUOTA = "quota"
    RATE_LIMITED = "rate_limited"
    NO_CAPACITY = "no_capacity"
    DRAINING = "draining"
    DENIED = "denied"


class FoyerError(Exception):
    """Every error of this module."""


class Timeout(FoyerError, builtins.TimeoutError):
    """No attempt got its reply in time."""


class Refused(FoyerError):
    """The lobby said no (JOIN_FAILED), for reason."""

    def __init__(self, message: str, reason: Reason = Reason.UNSPECIFIED):
        super().__init__(message)
        self.reason = reason


class Unreachable(FoyerError):
    """Nothing listens on the lobby's port (ICMP port unreachable)."""


class NotSupported(FoyerError):
    """The verb or option needs Foyer's protocol extension, which this lobby does not speak."""


class Closed(FoyerError):
    """The client was closed."""


class MalformedPacket(FoyerError, ValueError):
    """decode refused a datagram; reason is the protocol's label ("crc", ...)."""

    def __init__(self, reason: str):
        super().__init__("malformed datagram: " + reason)
        self.reason = reason


@dataclass(frozen=True)
class Room:
    id: int
    players: int
    max_players: int
    port: int
    state: RoomState
    # Carried by Foyer's protocol extension; empty from a seed lobby.
    name: str = ""
    mode: str = ""
    map: str = ""
    tags: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Seat:
    """A place the lobby holds for this client: send the game traffic to address:port."""
    room: int
    address: str
    port: int
    # A seat token and its expiry (Unix seconds) come with the extension.
    token: bytes = b""
    expires: Optional[float] = None


@dataclass
class Filter:
    """Which rooms list and quick_join want. A seed lobby lists everything:
    state and free_seats are applied here; the others need the extension."""
    state: Optional[RoomState] = None
    free_seats: int = 0
    mode: Optional[str] = None
    map: Optional[str] = None
    name_prefix: Optional[str] = None
    tags: Optional[Dict[str, str]] = None

    def _check(self) -> None:
        if self.mode or self.map or self.name_prefix or self.tags:
            raise NotSupported("filtering by mode, map, name or tags is not supported by this lobby")

    def matches(self, r: Room) -> bool:
        return (self.state is None or r.state == self.state) and r.max_players - r.players >= self.free_seats


@dataclass
class CreateOptions:
    """What a new room is to be. A seed lobby takes none of it."""
    name: str = ""
    mode: str = ""
    map: str = ""
    tags: Optional[Dict[str, str]] = None
    private: bool = False
    password: Optional[str] = None

    def _check(self) -> None:
        if self.name or self.mode or self.map or self.tags or self.private or self.password:
            raise NotSupported("room options are not supported by this lobby")


# --- codec -------------------------------------------------------------------

_MAGIC = b"\xa3\x5f\xc8\x1d"
_REQUEST, _REPLY = 0x01, 0x02
_ROOM = struct.Struct(">IHHHB")


@dataclass(frozen=True)
class Message:
    framing: Framing
    type: MessageType
    seq: int
    tick: int = 0
    compressed: bool = False
    room: int = 0
    port: int = 0
    rooms: Tuple[Room, ...] = ()


def encode_request(type: MessageType, seq: int, framing: Framing = Framing.COMPACT,
                   tick: int = 0, room: int = 0) -> bytes:
    """The datagram of a LIST_ROOMS, CREATE_ROOM or JOIN_ROOM (room) request."""
    payload = struct.pack(">I", room) if type == MessageType.JOIN_ROOM else b""
    n = len(payload)
    if framing == Framing.LEGACY:
        head = _MAGIC + struct.pack(">BBBHIHH", 1, _REQUEST, type, seq, tick, n, n)
    else:
        head = struct.pack(">BBHHH", _REQUEST, type, seq, n, n)
    b = head + payload
    return b + struct.pack(">I", zlib.crc32(b))


def _direction(t: int) -> int:
    return _REQUEST if t in (0x40, 0x42, 0x44) else _REPLY


def _holds(t: int, n: int) -> bool:
    if t == MessageType.JOIN_ROOM:
        return n == 4
    if t in (MessageType.ROOM_CREATED, MessageType.JOIN_SUCCESS):
        return n == 6
    if t == MessageType.ROOM_LIST:
        return n >= 2 and (n - 2) % 11 == 0
    return n == 0


def decode(b: bytes) -> Message:
    """Checks one datagram in either framing as docs/protocol.md says, in its
    order, and returns it; MalformedPacket names the first rule it breaks."""
    legacy = len(b) > 0 and b[0] == 0xA3
    hl = 17 if legacy else 8
    if len(b) < hl + 4:
        raise MalformedPacket("short")
    tick, flagged = 0, False
    if legacy:
        if b[:4] != _MAGIC or b[4] & 0x7F != 1:
            raise MalformedPacket("magic")
        flagged = b[4] & 0x80 != 0
        direction, t, seq, tick, n, original = struct.unpack_from(">BBHIHH", b, 5)
    else:
        direction, t, seq, n, original = struct.unpack_from(">BBHHH", b, 0)
    if len(b) != hl + n + 4:
        raise MalformedPacket("length")
    if struct.unpack_from(">I", b, len(b) - 4)[0] != zlib.crc32(b[:-4]):
        raise MalformedPacket("crc")
    if direction not in (_REQUEST, _REPLY):
        raise MalformedPacket("packet_type")
    if not 0x40 <= t <= 0x46:
        raise MalformedPacket("unknown_type")
    if direction != _direction(t):
        raise MalformedPacket("direction")
    payload = b[hl:hl + n]
    if legacy and not flagged and original == 0:
        original = n  # the original game's encoder leaves it 0 on a plain payload
    compressed = original > n
    if original < n or (legacy and flagged != compressed):
        raise MalformedPacket("compression")
    if compressed:
        if not _holds(t, original) or original > 255 * n + 16:
            raise MalformedPacket("compression")
        payload = lz4_decompress(payload, original)
    m = dict(framing=Framing.LEGACY if legacy else Framing.COMPACT, type=MessageType(t),
             seq=seq, tick=tick, compressed=compressed)
    if t == MessageType.ROOM_LIST:
        m["rooms"] = _rooms(payload)
    elif not _holds(t, len(payload)):
        raise MalformedPacket("payload_size")
    elif t == MessageType.JOIN_ROOM:
        m["room"] = struct.unpack(">I", payload)[0]
    elif t in (MessageType.ROOM_CREATED, MessageType.JOIN_SUCCESS):
        m["room"], m["port"] = struct.unpack(">IH", payload)
    return Message(**m)


def _rooms(p: bytes) -> Tuple[Room, ...]:
    if len(p) < 2 or len(p) != 2 + 11 * struct.unpack_from(">H", p)[0]:
        raise MalformedPacket("payload_size")
    if (len(p) - 2) // 11 > MAX_ROOMS:
        raise MalformedPacket("room_count")
    rooms = []
    for i in range(2, len(p), 11):
        rid, players, maxp, port, state = _ROOM.unpack_from(p, i)
        if state > RoomState.FINISHED:
            raise MalformedPacket("room_state")
        rooms.append(Room(rid, players, maxp, port, RoomState(state)))
    return tuple(rooms)


def lz4_decompress(src: bytes, size: int) -> bytes:
    """Inflates one LZ4 block (no frame) to exactly size bytes, or raises
    MalformedPacket("compression")."""
    bad = MalformedPacket("compression")
    out = bytearray()
    i, n = 0, len(src)

    def length(i: int, v: int) -> Tuple[int, int]:
        while True:
            if i >= n:
                raise bad
            x = src[i]
            i, v = i + 1, v + x
            if x != 255:
                return i, v

    while True:
        if i >= n:
            raise bad
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            i, lit = length(i, lit)
        if i + lit > n or len(out) + lit > size:
            raise bad
        out += src[i:i + lit]
        i += lit
        if i == n:
            break  # the last sequence is literals only
        if i + 2 > n:
            raise bad
        off = src[i] | src[i + 1] << 8
        i += 2
        ml = token & 15
        if ml == 15:
            i, ml = length(i, ml)
        ml += 4
        if off == 0 or off > len(out) or len(out) + ml > size:
            raise bad
        start = len(out) - off
        if off >= ml:
            out += out[start:start + ml]
        else:
            for k in range(ml):  # the match overlaps what it writes
                out.append(out[start + k])
    if len(out) != size:
        raise bad
    return bytes(out)


# --- clients -----------------------------------------------------------------

def _split(addr: Union[str, Tuple[str, int]]) -> Tuple[str, int]:
    if isinstance(addr, tuple):
        return addr
    host, _, port = addr.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


_AWAITING = {
    MessageType.LIST_ROOMS: "ROOM_LIST",
    MessageType.CREATE_ROOM: "ROOM_CREATED or JOIN_FAILED",
    MessageType.JOIN_ROOM: "JOIN_SUCCESS or JOIN_FAILED",
}


class _Core:
    """What both clients share: options, sequence ids, requests and replies."""

    def __init__(self, lobby, timeout: float, attempts: int, framing: Framing):
        self.host, self.port = _split(lobby)
        self.timeout = timeout if timeout > 0 else DEFAULT_TIMEOUT
        self.attempts = attempts if attempts > 0 else DEFAULT_ATTEMPTS
        self.framing = framing
        self._seq = random.randrange(1 << 16)
        self._answered = False  # the lobby has answered this client once
        self._peer = ""  # the lobby's IP: where seats are

    def _next(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFF
        return self._seq

    def _op(self, t: MessageType, room: int) -> str:
        what = {MessageType.LIST_ROOMS: "list", MessageType.CREATE_ROOM: "create"}.get(t, "join")
        return f"{what} {self.host}:{self.port}" + (f" room {room}" if t == MessageType.JOIN_ROOM else "")

    @staticmethod
    def _answers(t: MessageType, room: int, m: Message) -> bool:
        if t == MessageType.LIST_ROOMS:
            return m.type == MessageType.ROOM_LIST
        if t == MessageType.CREATE_ROOM:
            return m.type in (MessageType.ROOM_CREATED, MessageType.JOIN_FAILED)
        return m.type == MessageType.JOIN_FAILED or (m.type == MessageType.JOIN_SUCCESS and m.room == room)

    def _failed(self, t: MessageType, room: int, refused: bool) -> FoyerError:
        if refused:
            return Unreachable(f"{self._op(t, room)}: nothing listens on that port (port unreachable)")
        return Timeout(f"{self._op(t, room)}: timeout: no {_AWAITING[t]} after "
                       f"{self.attempts} attempts of {self.timeout:g}s")

    def _seat(self, t: MessageType, room: int, m: Message) -> Seat:
        if m.type == MessageType.JOIN_FAILED:
            hint = "the lobby could not start a room" if t == MessageType.CREATE_ROOM \
                else "room unknown, full, or not waiting"
            raise Refused(f"{self._op(t, room)}: lobby answered JOIN_FAILED ({hint})")
        return Seat(room=m.room, address=self._peer, port=m.port)

    @staticmethod
    def _room_id(room: Union[int, str]) -> int:
        if isinstance(room, str):
            raise NotSupported("joining by code is not supported by this lobby")
        return room


class Client(_Core):
    """A blocking client of one lobby; not for use from several threads at once.

    >>> with Client("127.0.0.1:7777") as c:
    ...     seat = c.create()
    """

    def __init__(self, lobby, *, timeout: float = DEFAULT_TIMEOUT,
                 attempts: int = DEFAULT_ATTEMPTS, framing: Framing = Framing.COMPACT):
        super().__init__(lobby, timeout, attempts, framing)
        info = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_DGRAM)[0]
        self._sock = socket.socket(info[0], socket.SOCK_DGRAM)
        self._sock.connect(info[4])
        self._peer = info[4][0]
        self._closed = False

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        self._sock.close()

    def list(self, filter: Optional[Filter] = None) -> List[Room]:
        if filter:
            filter._check()
        rooms = self._do(MessageType.LIST_ROOMS).rooms
        return [r for r in rooms if filter is None or filter.matches(r)]

    def create(self, options: Optional[CreateOptions] = None) -> Seat:
        if options:
            options._check()
        if not self._answered:
            self.list()  # a lobby starts few rooms for senders it never answered
        return self._seat(MessageType.CREATE_ROOM, 0, self._do(MessageType.CREATE_ROOM))

    def join(self, room: Union[int, str], password: Optional[str] = None) -> Seat:
        rid = self._room_id(room)
        if password:
            raise NotSupported("passwords are not supported by this lobby")
        return self._seat(MessageType.JOIN_ROOM, rid, self._do(MessageType.JOIN_ROOM, rid))

    def quick_join(self, filter: Optional[Filter] = None) -> Seat:
        raise NotSupported("quick join is not supported by this lobby")

    def _do(self, t: MessageType, room: int = 0) -> Message:
        if self._closed:
            raise Closed(f"{self._op(t, room)}: client closed")
        seq = self._next()
        pkt = encode_request(t, seq, self.framing, room=room)
        refused = False
        for attempt in range(self.attempts):
            if attempt and refused:
                time.sleep(min(REFUSED_PAUSE, self.timeout))
            refused = False
            try:
                self._sock.send(pkt)
                m = self._await(t, room, seq, time.monotonic() + self.timeout)
            except ConnectionRefusedError:
                refused = True
                continue
            except OSError as e:
                if self._closed:
                    raise Closed(f"{self._op(t, room)}: client closed") from None
                raise FoyerError(f"{self._op(t, room)}: {e}") from e
            if m is not None:
                self._answered = True
                return m
        raise self._failed(t, room, refused)

    def _await(self, t: MessageType, room: int, seq: int, deadline: float) -> Optional[Message]:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._sock.settimeout(left)
            try:
                b = self._sock.recv(65536)
            except socket.timeout:
                return None
            try:
                m = decode(b)
            except MalformedPacket:
                continue
            if m.seq == seq and self._answers(t, room, m):
                return m


class AsyncClient(_Core):
    """The asyncio client of one lobby; its requests may run concurrently.

        async with await AsyncClient.connect("127.0.0.1:7777") as c:
            seat = await c.join(42)
    """

    @classmethod
    async def connect(cls, lobby, *, timeout: float = DEFAULT_TIMEOUT,
                      attempts: int = DEFAULT_ATTEMPTS, framing: Framing = Framing.COMPACT) -> "AsyncClient":
        self = cls(lobby, timeout, attempts, framing)
        loop = asyncio.get_running_loop()
        self._pending: Dict[int, Tuple[MessageType, int, asyncio.Future, asyncio.Event]] = {}
        self._transport, _ = await loop.create_datagram_endpoint(
            lambda: _Protocol(self), remote_addr=(self.host, self.port))
        self._peer = self._transport.get_extra_info("peername")[0]
        return self

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._transport.close()

    async def list(self, filter: Optional[Filter] = None) -> List[Room]:
        if filter:
            filter._check()
        rooms = (await self._do(MessageType.LIST_ROOMS)).rooms
        return [r for r in rooms if filter is None or filter.matches(r)]

    async def create(self, options: Optional[CreateOptions] = None) -> Seat:
        if options:
            options._check()
        if not self._answered:
            await self.list()
        return self._seat(MessageType.CREATE_ROOM, 0, await self._do(MessageType.CREATE_ROOM))

    async def join(self, room: Union[int, str], password: Optional[str] = None) -> Seat:
        rid = self._room_id(room)
        if password:
            raise NotSupported("passwords are not supported by this lobby")
        return self._seat(MessageType.JOIN_ROOM, rid, await self._do(MessageType.JOIN_ROOM, rid))

    async def quick_join(self, filter: Optional[Filter] = None) -> Seat:
        raise NotSupported("quick join is not supported by this lobby")

    async def _do(self, t: MessageType, room: int = 0) -> Message:
        if self._transport.is_closing():
            raise Closed(f"{self._op(t, room)}: client closed")
        seq = self._next()
        while seq in self._pending:
            seq = self._next()
        reply, refusal = asyncio.get_running_loop().create_future(), asyncio.Event()
        self._pending[seq] = (t, room, reply, refusal)
        pkt = encode_request(t, seq, self.framing, room=room)
        refused = False
        try:
            for attempt in range(self.attempts):
                if attempt and refused:
                    await asyncio.sleep(min(REFUSED_PAUSE, self.timeout))
                refused = False
                refusal.clear()
                self._transport.sendto(pkt)
                waiter = asyncio.ensure_future(refusal.wait())
                done, _ = await asyncio.wait({reply, waiter}, timeout=self.timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if reply in done:
                    self._answered = True
                    return reply.result()
                refused = waiter in done
                if self._transport.is_closing():
                    raise Closed(f"{self._op(t, room)}: client closed")
            raise self._failed(t, room, refused)
        finally:
            del self._pending[seq]

    def _received(self, b: bytes) -> None:
        try:
            m = decode(b)
        except MalformedPacket:
            return
        p = self._pending.get(m.seq)
        if p and not p[2].done() and self._answers(p[0], p[1], m):
            p[2].set_result(m)

    def _refused(self) -> None:
        for _, _, _, refusal in self._pending.values():
            refusal.set()


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, client: AsyncClient):
        self.client = client

    def datagram_received(self, data: bytes, addr) -> None:
        self.client._received(data)

    def error_received(self, exc: Exception) -> None:
        if isinstance(exc, ConnectionRefusedError):
            self.client._refused()
