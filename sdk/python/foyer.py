"""A client of Foyer lobbies, on the standard library alone.

A game, a bot or a test lists a lobby's rooms, creates one or joins one,
and gets back a seat: where the room's game server listens. Client is
blocking; AsyncClient is the same on asyncio. Both send each request up to
`attempts` times, `timeout` seconds apart, with the same sequence id, so a
lobby that already acted on it answers from its retry cache instead of
acting twice. Replies are matched by sequence id; anything else that
reaches the socket (stray or malformed datagrams, bad CRCs) is dropped.

Foyer's extension (names, filters, codes, passwords, quick join, seat
tokens) is spoken to a lobby that answers it, as the Go client does: the
first extension request also lists the seed way, and a lobby that answers
only that, or nothing within a second, is taken to be a seed lobby for the
client's life; verbs then fall back to the seed messages where they can
and raise NotSupported where they cannot. The client echoes the retry token
the lobby hands out (EXT_RETRY) and pads its requests until it has one.

Errors are typed: Timeout, Refused (with a Reason), Unreachable,
NotSupported, Closed, all FoyerError. The native protocol (both framings,
LZ4-compressed lists) is in encode_request, encode_ext and decode.
"""

from __future__ import annotations

import asyncio
import builtins
import enum
import ipaddress
import os
import random
import socket
import struct
import time
import zlib
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Tuple, Union

__all__ = [
    "Client", "AsyncClient", "Room", "Seat", "Filter", "CreateOptions",
    "Framing", "MessageType", "RoomState", "Reason", "Message", "ExtMessage",
    "FoyerError", "Timeout", "Refused", "Unreachable", "NotSupported", "Closed",
    "MalformedPacket", "encode_request", "encode_ext", "decode", "lz4_decompress", "present",
]

DEFAULT_TIMEOUT = 5.0
DEFAULT_ATTEMPTS = 3
MAX_ROOMS = 5037
REFUSED_PAUSE = 0.25  # after "port unreachable", before trying again
PROBE_TIMEOUT = 1.0  # the first extension request's wait: then a seed lobby
PROBE_GRACE = 0.2  # after a seed answer to the probe, before deciding so
PAD_TO = 64  # a request without a retry token is padded to this length
MAX_PAGES = 4096
EXT_VERSION = 1
EXT_MAX_PAYLOAD = 1200 - 8 - 4
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ"


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
    EXT_LIST = 0x80
    EXT_ROOMS = 0x81
    EXT_CREATE = 0x82
    EXT_SEAT = 0x83
    EXT_JOIN = 0x84
    EXT_REFUSED = 0x85
    EXT_QUICK = 0x86
    EXT_RETRY = 0x87
    EXT_PRESENT = 0x88
    EXT_ADMITTED = 0x89


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


_REASONS = list(Reason)  # by the extension's number: 0 UNSPECIFIED ... 9 DENIED


class FoyerError(Exception):
    """Every error of this module."""


class Timeout(FoyerError, builtins.TimeoutError):
    """No attempt got its reply in time."""


class Refused(FoyerError):
    """The lobby said no (JOIN_FAILED, or EXT_REFUSED with its reason)."""

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
    code: str = ""
    password: bool = False


@dataclass(frozen=True)
class Seat:
    """A place the lobby holds for this client: send the game traffic to address:port."""
    room: int
    address: str
    port: int
    # A seat token and its expiry (Unix seconds) come with the extension.
    token: bytes = b""
    expires: Optional[float] = None
    code: str = ""  # the room's join code


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
        if self.private or self.password:
            raise NotSupported("private rooms and passwords are not supported by this lobby")


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
    return _frame(type, seq, framing, tick, struct.pack(">I", room) if type == MessageType.JOIN_ROOM else b"")


def _frame(t: int, seq: int, framing: Framing, tick: int, payload: bytes) -> bytes:
    n = len(payload)
    if framing == Framing.LEGACY:
        head = _MAGIC + struct.pack(">BBBHIHH", 1, _REQUEST, t, seq, tick, n, n)
    else:
        head = struct.pack(">BBHHH", _REQUEST, t, seq, n, n)
    b = head + payload
    return b + struct.pack(">I", zlib.crc32(b))


def _direction(t: int) -> int:
    return _REQUEST if t in (0x40, 0x42, 0x44) or t >= 0x80 and t % 2 == 0 else _REPLY


def _holds(t: int, n: int) -> bool:
    if t >= 0x80:
        return n <= EXT_MAX_PAYLOAD
    if t == MessageType.JOIN_ROOM:
        return n == 4
    if t in (MessageType.ROOM_CREATED, MessageType.JOIN_SUCCESS):
        return n == 6
    if t == MessageType.ROOM_LIST:
        return n >= 2 and (n - 2) % 11 == 0
    return n == 0


def decode(b: bytes) -> Message:
    """Checks one datagram in either framing as docs/protocol.md says, in its
    order, and returns it; MalformedPacket names the first rule it breaks.
    Of the extension it reads the lobby's replies (an ExtMessage); its
    requests are the lobby's to read ("unknown_type" here)."""
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
    if not (0x40 <= t <= 0x46 or t in _EXT_REPLIES):
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
    if t >= 0x80:
        del m["compressed"]
        return _decode_ext(payload, m)
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


# --- the extension -----------------------------------------------------------

_EXT_REPLIES = (0x81, 0x83, 0x85, 0x87, 0x89)


@dataclass(frozen=True)
class ExtMessage:
    """An extension message: a request encode_ext writes (EXT_LIST,
    EXT_CREATE, EXT_JOIN, EXT_QUICK, and EXT_PRESENT to a room) or a reply
    decode reads (EXT_ROOMS, EXT_SEAT, EXT_REFUSED, EXT_RETRY, and
    EXT_ADMITTED from a room). Each type uses the fields it has."""
    framing: Framing
    type: MessageType
    seq: int
    tick: int = 0
    token: bytes = b""  # the retry token a request echoes, or EXT_RETRY hands out
    pad: int = 0  # zero bytes a request ends with
    client: bytes = bytes(8)  # the client's own id, which its seat token binds
    filter: Optional[Filter] = None  # EXT_LIST, EXT_QUICK
    cursor: int = 0  # EXT_LIST
    limit: int = 0  # EXT_LIST
    options: Optional[CreateOptions] = None  # EXT_CREATE
    password: str = ""  # EXT_JOIN
    room: int = 0  # EXT_JOIN (or code), EXT_SEAT, EXT_ADMITTED
    code: str = ""  # EXT_JOIN (or room), EXT_SEAT
    port: int = 0  # EXT_SEAT
    address: str = ""  # EXT_SEAT: where the room runs; "" for the lobby's address
    seat_token: bytes = b""  # EXT_SEAT, EXT_PRESENT
    next: int = 0  # EXT_ROOMS: the cursor of the next page, 0 after the last
    rooms: Tuple[Room, ...] = ()  # EXT_ROOMS
    reason: Reason = Reason.UNSPECIFIED  # EXT_REFUSED


def _field(ok: bool) -> None:
    if not ok:
        raise ValueError("extension field out of range")


def _valid_text(b: bytes) -> bool:
    try:
        s = b.decode()
    except UnicodeDecodeError:
        return False
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in s)


def _valid_key(k: str) -> bool:
    return 0 < len(k) <= 16 and all(c in "abcdefghijklmnopqrstuvwxyz0123456789_-." for c in k)


def _valid_code(s: str) -> bool:
    return len(s) == 6 and all(c in CODE_ALPHABET for c in s)


def _blob(b: bytes) -> bytes:
    _field(len(b) <= 64)
    return bytes([len(b)]) + b


def _text(s: Optional[str], most: int) -> bytes:
    b = (s or "").encode()
    _field(len(b) <= most and _valid_text(b))
    return bytes([len(b)]) + b


def _tags(tags: Optional[Dict[str, str]]) -> bytes:
    tags = tags or {}
    _field(len(tags) <= 4 and all(_valid_key(k) for k in tags))
    return bytes([len(tags)]) + b"".join(_text(k, 16) + _text(v, 32) for k, v in tags.items())


def _ext_filter(f: Optional[Filter]) -> bytes:
    f = f or Filter()
    states = 0 if f.state is None else 1 << f.state
    return bytes([states, f.free_seats]) + _text(f.mode, 16) + _text(f.map, 32) + \
        _text(f.name_prefix, 32) + _tags(f.tags)


def encode_ext(m: ExtMessage) -> bytes:
    """The datagram of an extension request; ValueError for a field out of
    its range (a name too long, a tag key not of a-z0-9_-., ...)."""
    t, p = m.type, bytes([EXT_VERSION]) + _blob(m.token)
    _field(len(m.client) == 8)
    if t == MessageType.EXT_PRESENT:  # to a room: its seat token, never padded
        _field(len(m.seat_token) > 0)
        return _frame(t, m.seq, m.framing, m.tick, bytes([EXT_VERSION]) + _blob(m.seat_token))
    if t == MessageType.EXT_LIST:
        p += struct.pack(">IB", m.cursor, m.limit) + _ext_filter(m.filter)
    elif t == MessageType.EXT_CREATE:
        o = m.options or CreateOptions()
        p += m.client + bytes([1 if o.private else 0]) + _text(o.name, 32) + _text(o.mode, 16) + \
            _text(o.map, 32) + _tags(o.tags) + _text(o.password, 64)
    elif t == MessageType.EXT_JOIN:
        _field((m.room == 0) != (m.code == "") and (not m.code or _valid_code(m.code)))
        p += m.client + struct.pack(">I", m.room) + (b"\x06" + m.code.encode() if m.code else b"\x00") + \
            _text(m.password, 64)
    elif t == MessageType.EXT_QUICK:
        p += m.client + _ext_filter(m.filter)
    else:
        raise ValueError("not an extension request")
    p += bytes(m.pad)
    _field(len(p) <= EXT_MAX_PAYLOAD)
    return _frame(t, m.seq, m.framing, m.tick, p)


class _Reader:
    """Reads an extension payload front to back; MalformedPacket at the first fault."""

    def __init__(self, p: bytes):
        self.p, self.i = p, 0

    def take(self, n: int) -> bytes:
        if self.i + n > len(self.p):
            raise MalformedPacket("ext_short")
        self.i += n
        return self.p[self.i - n:self.i]

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def check(self, ok: bool) -> None:
        if not ok:
            raise MalformedPacket("ext_field")

    def text(self, most: int) -> str:
        b = self.take(self.take(1)[0])
        self.check(len(b) <= most and _valid_text(b))
        return b.decode()

    def code(self) -> str:
        s = self.take(6).decode("latin-1")
        self.check(_valid_code(s))
        return s

    def blob(self) -> bytes:
        n = self.take(1)[0]
        self.check(n <= 64)
        return self.take(n)

    def tags(self) -> Dict[str, str]:
        n, tags = self.take(1)[0], {}
        self.check(n <= 4)
        for _ in range(n):
            k, v = self.text(16), self.text(32)
            self.check(_valid_key(k) and k not in tags)
            tags[k] = v
        return tags


def _decode_ext(p: bytes, m: dict) -> ExtMessage:
    r = _Reader(p)
    if r.take(1)[0] != EXT_VERSION:
        raise MalformedPacket("ext_version")
    t = m["type"]
    if t == MessageType.EXT_ROOMS:
        m["next"], n = r.unpack(">IB")
        rooms = []
        for _ in range(n):
            if len(p) - r.i < 22:  # the fewest bytes an entry takes: n is backed before it is read
                raise MalformedPacket("ext_short")
            rid, players, most, port, state, flags = r.unpack(">IHHHBB")
            r.check(state <= RoomState.FINISHED and flags & ~1 == 0)
            code = r.code()
            name, mode, map_ = r.text(32), r.text(16), r.text(32)
            rooms.append(Room(rid, players, most, port, RoomState(state), name, mode, map_, r.tags(),
                              code, flags & 1 == 1))
        m["rooms"] = tuple(rooms)
    elif t == MessageType.EXT_SEAT:
        m["room"], m["port"] = r.unpack(">IH")
        m["code"] = r.code()
        a = r.take(r.take(1)[0])
        r.check(len(a) in (0, 4) or len(a) == 16 and a[:12] != bytes(10) + b"\xff\xff")
        if a:
            m["address"] = socket.inet_ntop(socket.AF_INET if len(a) == 4 else socket.AF_INET6, a)
        m["seat_token"] = r.blob()
    elif t == MessageType.EXT_REFUSED:
        n = r.take(1)[0]
        m["reason"] = _REASONS[n] if n < len(_REASONS) else Reason.UNSPECIFIED
    elif t == MessageType.EXT_ADMITTED:
        m["room"], = r.unpack(">I")
    else:  # EXT_RETRY
        m["token"] = r.blob()
        r.check(len(m["token"]) > 0)
    if r.i != len(p):
        raise MalformedPacket("ext_trailing")
    return ExtMessage(**m)


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


# --- the room's door ----------------------------------------------------------

def present(sock: socket.socket, seat: Seat, timeout: float = DEFAULT_TIMEOUT,
            attempts: int = DEFAULT_ATTEMPTS) -> None:
    """Shows seat's token to its room from sock, a UDP socket, until the
    room answers EXT_ADMITTED, attempts times at most, each waiting
    timeout: the room's door then admits the socket's address into the
    seat, wherever it is (a new socket takes the seat back after a drop).
    A socket connected to seat.address, seat.port is used as it is; an
    unconnected one sends to the seat's address and port, stays
    unconnected, and takes EXT_ADMITTED only from that address and port.
    It reads sock meanwhile and drops what else comes; call it before
    reading sock for the game. Raises Timeout when no EXT_ADMITTED comes (a
    door drops a token it does not take unanswered), ValueError for a seat
    without a token (a seed lobby's)."""
    op = f"present {seat.address}:{seat.port} room {seat.room}"
    if not seat.token:
        raise ValueError(f"{op}: the seat has no token (a seed lobby's)")
    pkt = encode_ext(ExtMessage(Framing.COMPACT, MessageType.EXT_PRESENT, 0, seat_token=seat.token))
    timeout = timeout if timeout > 0 else DEFAULT_TIMEOUT
    attempts = attempts if attempts > 0 else DEFAULT_ATTEMPTS
    send, recv = _room_path(sock, seat)
    before = sock.gettimeout()
    try:
        for _ in range(attempts):
            try:
                send(pkt)
            except ConnectionRefusedError:
                pass  # the room's port refused an earlier datagram: this one may still reach it
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                try:
                    b = recv()
                except socket.timeout:
                    break  # the attempt's time is up
                except ConnectionRefusedError:
                    continue
                if b is None:
                    continue  # from another address than the room's
                try:
                    m = decode(b)
                except MalformedPacket:
                    continue
                if m.type == MessageType.EXT_ADMITTED and m.room == seat.room:
                    return
    finally:
        sock.settimeout(before)
    raise Timeout(f"{op}: timeout: no EXT_ADMITTED after {attempts} attempts of {timeout:g}s")


def _room_path(sock: socket.socket, seat: Seat) -> Tuple[Callable[[bytes], object], Callable[[], Optional[bytes]]]:
    """How present sends to seat's room and reads what it answers: through
    sock's own peer when it has one, else to the seat's address, taking
    only what comes from it (recv's None: from elsewhere)."""
    try:
        sock.getpeername()
        return sock.send, lambda: sock.recv(65536)
    except OSError:
        pass  # not connected
    try:
        room = ipaddress.ip_address(seat.address)
    except ValueError:  # a name: the address it has for sock's family
        room = _unmapped(socket.getaddrinfo(seat.address, seat.port, sock.family, socket.SOCK_DGRAM)[0][4][0])
    if sock.family == socket.AF_INET6 and room.version == 4:
        room = ipaddress.ip_address(f"::ffff:{room}")  # the form a dual-stack socket sends to
    to, ip = (str(room), seat.port), _unmapped(str(room))

    def recv() -> Optional[bytes]:
        b, src = sock.recvfrom(65536)
        return b if src[1] == seat.port and _unmapped(src[0]) == ip else None

    return lambda pkt: sock.sendto(pkt, to), recv


def _unmapped(address: str) -> Union[ipaddress.IPv4Address, ipaddress.IPv6Address]:
    """address as an IP, an IPv4-mapped IPv6 address as its IPv4 one."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return ip.ipv4_mapped or ip if ip.version == 6 else ip


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


@dataclass
class _Ask:
    """One exchange a verb needs: pkt(seq) sent up to attempts times, each
    waiting timeout for a reply that match(seq, m) takes. A probe also
    sends a seed LIST once, whose answer leaves the extension's answer
    PROBE_GRACE more (a seed lobby answers the one, not the other)."""
    op: str
    awaiting: str
    pkt: Callable[[int], bytes]
    match: Callable[[int, object], bool]
    timeout: float
    attempts: int
    probe: bool = False


def _seed_listed(seq: int, m) -> bool:
    return isinstance(m, Message) and m.seq == seq and m.type == MessageType.ROOM_LIST


class _Core:
    """What both clients share: options, sequence ids, and every verb as a
    generator of the exchanges (_Ask) it needs, which each client drives."""

    def __init__(self, lobby, timeout: float, attempts: int, framing: Framing):
        self.host, self.port = _split(lobby)
        self.timeout = timeout if timeout > 0 else DEFAULT_TIMEOUT
        self.attempts = attempts if attempts > 0 else DEFAULT_ATTEMPTS
        self.framing = framing
        self._seq = random.randrange(1 << 16)
        self._answered = False  # the lobby has answered this client once
        self._peer = ""  # the lobby's IP: where seats are
        self._ext: Optional[bool] = None  # the lobby speaks the extension; None: not known yet
        self._token = b""  # the lobby's retry token
        self._client = os.urandom(8)  # this client's id, which its seat tokens bind

    def _next(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFF
        return self._seq

    def _where(self) -> str:
        return f"{self.host}:{self.port}"

    def _op(self, t: MessageType, room: int) -> str:
        what = {MessageType.LIST_ROOMS: "list", MessageType.CREATE_ROOM: "create"}.get(t, "join")
        return f"{what} {self._where()}" + (f" room {room}" if t == MessageType.JOIN_ROOM else "")

    @staticmethod
    def _answers(t: MessageType, room: int, m) -> bool:
        if not isinstance(m, Message):
            return False
        if t == MessageType.LIST_ROOMS:
            return m.type == MessageType.ROOM_LIST
        if t == MessageType.CREATE_ROOM:
            return m.type in (MessageType.ROOM_CREATED, MessageType.JOIN_FAILED)
        return m.type == MessageType.JOIN_FAILED or (m.type == MessageType.JOIN_SUCCESS and m.room == room)

    @staticmethod
    def _failed(a: _Ask, refused: bool) -> FoyerError:
        if refused:
            return Unreachable(f"{a.op}: nothing listens on that port (port unreachable)")
        return Timeout(f"{a.op}: timeout: no {a.awaiting} after {a.attempts} attempts of {a.timeout:g}s")

    # The seed messages.

    def _seed(self, t: MessageType, room: int = 0):
        if t == MessageType.CREATE_ROOM and not self._answered:
            yield from self._seed(MessageType.LIST_ROOMS)  # a lobby starts few rooms for senders it never answered
        m = yield _Ask(self._op(t, room), _AWAITING[t], lambda seq: encode_request(t, seq, self.framing, room=room),
                       lambda seq, m: m.seq == seq and self._answers(t, room, m), self.timeout, self.attempts)
        self._answered = True
        if t == MessageType.LIST_ROOMS:
            return m
        if m.type == MessageType.JOIN_FAILED:
            hint = "the lobby could not start a room" if t == MessageType.CREATE_ROOM \
                else "room unknown, full, or not waiting"
            raise Refused(f"{self._op(t, room)}: lobby answered JOIN_FAILED ({hint})")
        return Seat(room=m.room, address=self._peer, port=m.port)

    # The extension.

    def _ext_ask(self, op: str, t: MessageType, fields: dict, timeout: float, attempts: int,
                 probe: bool = False) -> _Ask:
        token = self._token
        want = MessageType.EXT_ROOMS if t == MessageType.EXT_LIST else MessageType.EXT_SEAT

        def pkt(seq: int) -> bytes:
            m = ExtMessage(self.framing, t, seq, token=token, **fields)
            b = encode_ext(m)
            return b if token else encode_ext(replace(m, pad=max(PAD_TO - len(b), 0)))

        def match(seq: int, m) -> bool:
            return isinstance(m, ExtMessage) and m.seq == seq and \
                m.type in (want, MessageType.EXT_RETRY, MessageType.EXT_REFUSED)
        return _Ask(op, want.name + " or EXT_REFUSED", pkt, match, timeout, attempts, probe)

    def _probe(self, op: str):
        if self._ext is None:
            try:
                r = yield self._ext_ask(op, MessageType.EXT_LIST, {"limit": 1},
                                        min(self.timeout, PROBE_TIMEOUT), 1, probe=True)
            except (Timeout, Unreachable):
                self._ext = False
            else:
                self._ext = True
                if r.type == MessageType.EXT_RETRY:
                    self._token = r.token
        if not self._ext:
            raise NotSupported(f"{op}: the lobby does not speak the extension")

    def _ask(self, op: str, t: MessageType, **fields):
        yield from self._probe(op)
        for _ in range(3):
            r = yield self._ext_ask(op, t, fields, self.timeout, self.attempts)
            if r.type == MessageType.EXT_RETRY:
                self._token = r.token
                continue
            if r.type == MessageType.EXT_REFUSED:
                raise Refused(f"{op}: lobby refused: {r.reason.value}", r.reason)
            self._answered = True
            return r
        raise Timeout(f"{op}: the lobby asks for a retry token again and again")

    def _seat(self, r: ExtMessage) -> Seat:
        tok = r.seat_token
        expires = struct.unpack_from(">I", tok, 21)[0] if len(tok) == 41 and tok[0] == 1 else None
        return Seat(r.room, r.address or self._peer, r.port, tok, expires, r.code)

    # The verbs.

    def _page(self, f: Optional[Filter], cursor: int, limit: int):
        r = yield from self._ask(f"list {self._where()}", MessageType.EXT_LIST, filter=f, cursor=cursor, limit=limit)
        return list(r.rooms), r.next

    def _list(self, f: Optional[Filter]):
        f, rooms, cursor = f or Filter(), [], 0
        for _ in range(MAX_PAGES):
            try:
                page, nxt = yield from self._page(f, cursor, 0)
            except NotSupported:
                f._check()
                m = yield from self._seed(MessageType.LIST_ROOMS)
                return [r for r in m.rooms if f.matches(r)]
            rooms += page
            if nxt == 0 or nxt <= cursor:
                break
            cursor = nxt
        return rooms

    def _create(self, o: Optional[CreateOptions]):
        o = o or CreateOptions()
        try:
            r = yield from self._ask(f"create {self._where()}", MessageType.EXT_CREATE, client=self._client, options=o)
        except NotSupported:
            o._check()
            return (yield from self._seed(MessageType.CREATE_ROOM))
        return self._seat(r)

    def _join(self, room: Union[int, str], password: Optional[str]):
        if isinstance(room, str):
            code = room.upper()
            op = f"join {self._where()} code {code}"
            if not _valid_code(code):
                raise ValueError(f"{op}: not a join code (6 letters of {CODE_ALPHABET})")
            r = yield from self._ask(op, MessageType.EXT_JOIN, client=self._client, code=code, password=password or "")
            return self._seat(r)
        try:
            r = yield from self._ask(self._op(MessageType.JOIN_ROOM, room), MessageType.EXT_JOIN,
                                     client=self._client, room=room, password=password or "")
        except NotSupported:
            if password:
                raise
            return (yield from self._seed(MessageType.JOIN_ROOM, room))
        return self._seat(r)

    def _quick(self, f: Optional[Filter]):
        f = f or Filter()
        try:
            return self._seat((yield from self._ask(f"quick {self._where()}", MessageType.EXT_QUICK,
                                                     client=self._client, filter=f)))
        except NotSupported:
            pass
        for r in sorted((yield from self._list(f)), key=lambda r: -r.players):
            if r.state in (RoomState.WAITING, RoomState.COUNTDOWN) and r.players < r.max_players:
                try:
                    return (yield from self._join(r.id, None))
                except FoyerError:
                    pass
        return (yield from self._create(None))


def _step(gen, result, error):
    """Resumes verb gen with the result or error of its last exchange: the
    next exchange it needs, or StopIteration with what it returns."""
    return gen.throw(error) if error else gen.send(result)


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
        """Every room filter matches, page after page."""
        return self._drive(self._list(filter))

    def page(self, filter: Optional[Filter] = None, cursor: int = 0, limit: int = 0) -> Tuple[List[Room], int]:
        """One page of rooms after cursor, and the next page's cursor (0 after the last)."""
        return self._drive(self._page(filter, cursor, limit))

    def create(self, options: Optional[CreateOptions] = None) -> Seat:
        return self._drive(self._create(options))

    def join(self, room: Union[int, str], password: Optional[str] = None) -> Seat:
        """A seat in room (an id, or a join code), with its password if it has one."""
        return self._drive(self._join(room, password))

    def quick_join(self, filter: Optional[Filter] = None) -> Seat:
        """A seat in the fullest joinable room filter matches, or in a new one."""
        return self._drive(self._quick(filter))

    def _drive(self, gen):
        result = error = None
        while True:
            try:
                a = _step(gen, result, error)
            except StopIteration as done:
                return done.value
            result = error = None
            try:
                result = self._exchange(a)
            except FoyerError as e:
                error = e

    def _exchange(self, a: _Ask):
        if self._closed:
            raise Closed(f"{a.op}: client closed")
        seq, seed = self._next(), None
        pkt = a.pkt(seq)
        first = []
        if a.probe:
            seed = self._next()
            first = [encode_request(MessageType.LIST_ROOMS, seed, self.framing)]
        refused = False
        for attempt in range(a.attempts):
            if attempt and refused:
                time.sleep(min(REFUSED_PAUSE, a.timeout))
            refused = False
            try:
                for b in first + [pkt]:
                    self._sock.send(b)
                first = []
                m = self._await(a, seq, seed, time.monotonic() + a.timeout)
            except ConnectionRefusedError:
                refused = True
                continue
            except OSError as e:
                if self._closed:
                    raise Closed(f"{a.op}: client closed") from None
                raise FoyerError(f"{a.op}: {e}") from e
            if m is not None:
                return m
        raise self._failed(a, refused)

    def _await(self, a: _Ask, seq: int, seed: Optional[int], deadline: float):
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
            if a.match(seq, m):
                return m
            if seed is not None and _seed_listed(seed, m):
                deadline, seed = min(deadline, time.monotonic() + PROBE_GRACE), None


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
        self._pending: Dict[int, Tuple[Callable[[int, object], bool], asyncio.Future, asyncio.Event]] = {}
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
        return await self._drive(self._list(filter))

    async def page(self, filter: Optional[Filter] = None, cursor: int = 0, limit: int = 0) -> Tuple[List[Room], int]:
        return await self._drive(self._page(filter, cursor, limit))

    async def create(self, options: Optional[CreateOptions] = None) -> Seat:
        return await self._drive(self._create(options))

    async def join(self, room: Union[int, str], password: Optional[str] = None) -> Seat:
        return await self._drive(self._join(room, password))

    async def quick_join(self, filter: Optional[Filter] = None) -> Seat:
        return await self._drive(self._quick(filter))

    async def _drive(self, gen):
        result = error = None
        while True:
            try:
                a = _step(gen, result, error)
            except StopIteration as done:
                return done.value
            result = error = None
            try:
                result = await self._exchange(a)
            except FoyerError as e:
                error = e

    def _register(self, match) -> Tuple[int, asyncio.Future, asyncio.Event]:
        seq = self._next()
        while seq in self._pending:
            seq = self._next()
        entry = (match, asyncio.get_running_loop().create_future(), asyncio.Event())
        self._pending[seq] = entry
        return seq, entry[1], entry[2]

    async def _exchange(self, a: _Ask):
        if self._transport.is_closing():
            raise Closed(f"{a.op}: client closed")
        loop = asyncio.get_running_loop()
        seq, reply, refusal = self._register(a.match)
        seqs, seen = [seq], None
        try:
            if a.probe:
                s, seen, _ = self._register(_seed_listed)
                seqs.append(s)
                self._transport.sendto(encode_request(MessageType.LIST_ROOMS, s, self.framing))
            pkt, refused = a.pkt(seq), False
            for attempt in range(a.attempts):
                if attempt and refused:
                    await asyncio.sleep(min(REFUSED_PAUSE, a.timeout))
                refusal.clear()
                self._transport.sendto(pkt)
                waiter = asyncio.ensure_future(refusal.wait())
                end, done = loop.time() + a.timeout, set()
                while not done & {reply, waiter} and end > loop.time():
                    watch = {reply, waiter} if seen is None else {reply, waiter, seen}
                    done, _ = await asyncio.wait(watch, timeout=end - loop.time(),
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if seen in done:
                        end, seen = min(end, loop.time() + PROBE_GRACE), None
                waiter.cancel()
                if reply.done():
                    return reply.result()
                refused = waiter in done
                if self._transport.is_closing():
                    raise Closed(f"{a.op}: client closed")
            raise self._failed(a, refused)
        finally:
            for s in seqs:
                del self._pending[s]

    def _received(self, b: bytes) -> None:
        try:
            m = decode(b)
        except MalformedPacket:
            return
        p = self._pending.get(m.seq)
        if p and not p[1].done() and p[0](m.seq, m):
            p[1].set_result(m)

    def _refused(self) -> None:
        for _, _, refusal in self._pending.values():
            refusal.set()


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, client: AsyncClient):
        self.client = client

    def datagram_received(self, data: bytes, addr) -> None:
        self.client._received(data)

    def error_received(self, exc: Exception) -> None:
        if isinstance(exc, ConnectionRefusedError):
            self.client._refused()
