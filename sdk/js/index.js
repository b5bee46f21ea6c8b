// A client of Foyer lobbies for Node: list a lobby's rooms, create one or
// join one, and get a seat: where the room's game server listens.
//
// Each request is sent up to `attempts` times, `timeout` ms apart, with
// the same sequence id, so a lobby that already acted on it answers from
// its retry cache instead of acting twice. Replies are matched by sequence
// id; anything else reaching the socket (strays, bad CRCs) is dropped.
// The native protocol (both framings, LZ4-compressed lists) is in
// encodeRequest, encodeExt and decode.
//
// Foyer's extension (names, filters, codes, passwords, quick join, seat
// tokens) is spoken to a lobby that answers it, as the Go client does: the
// first extension request also lists the seed way, and a lobby that answers
// only that, or nothing within a second, is a seed lobby for the client's
// life; verbs then fall back to the seed messages where they can and throw
// NotSupportedError where they cannot. The client echoes the retry token
// the lobby hands out (EXT_RETRY) and pads its requests until it has one.

import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { randomBytes } from 'node:crypto';

export const DEFAULT_TIMEOUT = 5000;
export const DEFAULT_ATTEMPTS = 3;
export const MAX_ROOMS = 5037;
const REFUSED_PAUSE = 250; // after "port unreachable", before trying again
const PROBE_TIMEOUT = 1000; // the first extension request's wait: then a seed lobby
const PROBE_GRACE = 200; // after a seed answer to the probe, before deciding so
export const PAD_TO = 64; // a request without a retry token is padded to this length
const MAX_PAGES = 4096;
const EXT_MAX_PAYLOAD = 1200 - 8 - 4;
export const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ';

export const MessageType = Object.freeze({
  LIST_ROOMS: 0x40, ROOM_LIST: 0x41, CREATE_ROOM: 0x42, ROOM_CREATED: 0x43,
  JOIN_ROOM: 0x44, JOIN_SUCCESS: 0x45, JOIN_FAILED: 0x46,
  EXT_LIST: 0x80, EXT_ROOMS: 0x81, EXT_CREATE: 0x82, EXT_SEAT: 0x83,
  EXT_JOIN: 0x84, EXT_REFUSED: 0x85, EXT_QUICK: 0x86, EXT_RETRY: 0x87,
  EXT_PRESENT: 0x88, EXT_ADMITTED: 0x89,
});
const typeNames = Object.fromEntries(Object.entries(MessageType).map(([k, v]) => [v, k]));
export const ROOM_STATES = Object.freeze(['waiting', 'countdown', 'playing', 'finished']);
export const REASONS = Object.freeze(['unspecified', 'not_found', 'full', 'started', 'wrong_password',
  'quota', 'rate_limited', 'no_capacity', 'draining', 'denied']);

/** Every error of this package. */
export class FoyerError extends Error {
  constructor(message) { super(message); this.name = new.target.name; }
}
/** No attempt got its reply in time. */
export class TimeoutError extends FoyerError {}
/** The lobby said no (JOIN_FAILED, or EXT_REFUSED with its reason). */
export class RefusedError extends FoyerError {
  constructor(message, reason = 'unspecified') { super(message); this.reason = reason; }
}
/** Nothing listens on the lobby's port (ICMP port unreachable). */
export class UnreachableError extends FoyerError {}
/** The verb or option needs Foyer's protocol extension, which this lobby does not speak. */
export class NotSupportedError extends FoyerError {}
/** The client was closed. */
export class ClosedError extends FoyerError {}
/** decode refused a datagram; reason is the protocol's label ("crc", ...). */
export class MalformedPacketError extends FoyerError {
  constructor(reason) { super(`malformed datagram: ${reason}`); this.reason = reason; }
}

// --- codec -------------------------------------------------------------------

const MAGIC = [0xa3, 0x5f, 0xc8, 0x1d];
const REQUEST = 0x01;
const REPLY = 0x02;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** The IEEE CRC-32 of b, as zlib computes it. */
export function crc32(b) {
  let c = 0xffffffff;
  for (let i = 0; i < b.length; i++) c = CRC_TABLE[(c ^ b[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** The datagram of a LIST_ROOMS, CREATE_ROOM or JOIN_ROOM (room) request. */
export function encodeRequest(type, seq, { framing = 'compact', tick = 0, room = 0 } = {}) {
  const payload = Buffer.alloc(type === MessageType.JOIN_ROOM ? 4 : 0);
  if (payload.length) payload.writeUInt32BE(room >>> 0);
  return frame(type, seq, framing, tick, payload);
}

function frame(type, seq, framing, tick, payload) {
  const n = payload.length;
  const hl = framing === 'legacy' ? 17 : 8;
  const b = Buffer.alloc(hl + n + 4);
  if (framing === 'legacy') {
    b.set(MAGIC, 0);
    b[4] = 1; b[5] = REQUEST; b[6] = type;
    b.writeUInt16BE(seq, 7); b.writeUInt32BE(tick >>> 0, 9);
    b.writeUInt16BE(n, 13); b.writeUInt16BE(n, 15);
  } else {
    b[0] = REQUEST; b[1] = type;
    b.writeUInt16BE(seq, 2); b.writeUInt16BE(n, 4); b.writeUInt16BE(n, 6);
  }
  b.set(payload, hl);
  b.writeUInt32BE(crc32(b.subarray(0, hl + n)), hl + n);
  return b;
}

const isRequest = (t) => t === 0x40 || t === 0x42 || t === 0x44 || (t >= 0x80 && t % 2 === 0);
const EXT_REPLIES = [0x81, 0x83, 0x85, 0x87, 0x89];

function holds(t, n) {
  if (t >= 0x80) return n <= EXT_MAX_PAYLOAD;
  switch (t) {
    case MessageType.JOIN_ROOM: return n === 4;
    case MessageType.ROOM_CREATED: case MessageType.JOIN_SUCCESS: return n === 6;
    case MessageType.ROOM_LIST: return n >= 2 && (n - 2) % 11 === 0;
    default: return n === 0;
  }
}

/**
 * Checks one datagram in either framing as docs/protocol.md says, in its
 * order, and returns it; a MalformedPacketError names the first rule it breaks.
 * Of the extension it reads the lobby's replies; its requests are the
 * lobby's to read ('unknown_type' here).
 */
export function decode(b) {
  const legacy = b.length > 0 && b[0] === 0xa3;
  const hl = legacy ? 17 : 8;
  if (b.length < hl + 4) throw new MalformedPacketError('short');
  const v = new DataView(b.buffer, b.byteOffset, b.length);
  let dir, type, seq, tick = 0, n, original, flagged = false;
  if (legacy) {
    if (MAGIC.some((m, i) => b[i] !== m) || (b[4] & 0x7f) !== 1) throw new MalformedPacketError('magic');
    flagged = (b[4] & 0x80) !== 0;
    dir = b[5]; type = b[6]; seq = v.getUint16(7); tick = v.getUint32(9);
    n = v.getUint16(13); original = v.getUint16(15);
  } else {
    dir = b[0]; type = b[1]; seq = v.getUint16(2); n = v.getUint16(4); original = v.getUint16(6);
  }
  if (b.length !== hl + n + 4) throw new MalformedPacketError('length');
  if (v.getUint32(b.length - 4) !== crc32(b.subarray(0, b.length - 4))) throw new MalformedPacketError('crc');
  if (dir !== REQUEST && dir !== REPLY) throw new MalformedPacketError('packet_type');
  if ((type < 0x40 || type > 0x46) && !EXT_REPLIES.includes(type)) throw new MalformedPacketError('unknown_type');
  if ((dir === REQUEST) !== isRequest(type)) throw new MalformedPacketError('direction');
  let payload = b.subarray(hl, hl + n);
  if (legacy && !flagged && original === 0) original = n; // the original game's encoder leaves it 0
  const compressed = original > n;
  if (original < n || (legacy && flagged !== compressed)) throw new MalformedPacketError('compression');
  if (compressed) {
    if (!holds(type, original) || original > 255 * n + 16) throw new MalformedPacketError('compression');
    payload = lz4Decompress(payload, original);
  }
  const m = { framing: legacy ? 'legacy' : 'compact', type: typeNames[type], seq, tick, compressed, room: 0, port: 0, rooms: [] };
  if (type >= 0x80) return decodeExt(payload, m);
  if (type === MessageType.ROOM_LIST) {
    m.rooms = decodeRooms(payload);
  } else if (!holds(type, payload.length)) {
    throw new MalformedPacketError('payload_size');
  } else if (payload.length >= 4) {
    const p = new DataView(payload.buffer, payload.byteOffset, payload.length);
    m.room = p.getUint32(0);
    if (payload.length === 6) m.port = p.getUint16(4);
  }
  return m;
}

function decodeRooms(p) {
  if (p.length < 2) throw new MalformedPacketError('payload_size');
  const v = new DataView(p.buffer, p.byteOffset, p.length);
  const count = v.getUint16(0);
  if (p.length !== 2 + 11 * count) throw new MalformedPacketError('payload_size');
  if (count > MAX_ROOMS) throw new MalformedPacketError('room_count');
  const rooms = [];
  for (let i = 2; i < p.length; i += 11) {
    const state = p[i + 10];
    if (state > 3) throw new MalformedPacketError('room_state');
    rooms.push({ id: v.getUint32(i), players: v.getUint16(i + 4), maxPlayers: v.getUint16(i + 6),
      port: v.getUint16(i + 8), state: ROOM_STATES[state], name: '', mode: '', map: '', tags: {} });
  }
  return rooms;
}

// --- the extension -----------------------------------------------------------

const field = (ok) => { if (!ok) throw new RangeError('extension field out of range'); };
const textDecoder = new TextDecoder('utf-8', { fatal: true });

function validText(b) {
  let s;
  try { s = textDecoder.decode(b); } catch { return false; }
  for (const c of s) {
    const n = c.codePointAt(0);
    if (n < 0x20 || (n >= 0x7f && n < 0xa0)) return false;
  }
  return true;
}
const validKey = (k) => /^[a-z0-9_.-]{1,16}$/.test(k);
const validCode = (s) => s.length === 6 && [...s].every((c) => CODE_ALPHABET.includes(c));

const u8 = (v) => Buffer.from([v]);
function blob(b) { b ??= new Uint8Array(0); field(b.length <= 64); return Buffer.concat([u8(b.length), b]); }
function text(s, most) {
  const b = Buffer.from(s ?? '', 'utf8');
  field(b.length <= most && validText(b));
  return Buffer.concat([u8(b.length), b]);
}
function tags(t) {
  t ??= {};
  const e = Object.entries(t);
  field(e.length <= 4 && e.every(([k]) => validKey(k)));
  return Buffer.concat([u8(e.length), ...e.flatMap(([k, v]) => [text(k, 16), text(v, 32)])]);
}
function extFilter(f) {
  f ??= {};
  const states = f.state === undefined ? 0 : 1 << ROOM_STATES.indexOf(f.state);
  field(states > 0 || f.state === undefined);
  return Buffer.concat([Buffer.from([states, f.freeSeats ?? 0]), text(f.mode, 16), text(f.map, 32),
    text(f.namePrefix, 32), tags(f.tags)]);
}

/**
 * The datagram of an extension request (EXT_LIST, EXT_CREATE, EXT_JOIN,
 * EXT_QUICK, and EXT_PRESENT to a room); a RangeError for a field out of
 * its range.
 */
export function encodeExt(m) {
  const type = typeof m.type === 'string' ? MessageType[m.type] : m.type;
  if (type === MessageType.EXT_PRESENT) { // to a room: its seat token, never padded
    field(m.seatToken?.length > 0);
    return frame(type, m.seq, m.framing ?? 'compact', m.tick ?? 0, Buffer.concat([u8(1), blob(m.seatToken)]));
  }
  const client = m.client ?? new Uint8Array(8);
  field(client.length === 8);
  const parts = [u8(1), blob(m.token)];
  if (type === MessageType.EXT_LIST) {
    const b = Buffer.alloc(5);
    b.writeUInt32BE(m.cursor ?? 0); b[4] = m.limit ?? 0;
    parts.push(b, extFilter(m.filter));
  } else if (type === MessageType.EXT_CREATE) {
    const o = m.options ?? {};
    parts.push(client, u8(o.private ? 1 : 0), text(o.name, 32), text(o.mode, 16), text(o.map, 32), tags(o.tags),
      text(o.password, 64));
  } else if (type === MessageType.EXT_JOIN) {
    const room = m.room ?? 0, code = m.code ?? '';
    field((room === 0) !== (code === '') && (!code || validCode(code)));
    const b = Buffer.alloc(4);
    b.writeUInt32BE(room >>> 0);
    parts.push(client, b, code ? Buffer.concat([u8(6), Buffer.from(code)]) : u8(0), text(m.password, 64));
  } else if (type === MessageType.EXT_QUICK) {
    parts.push(client, extFilter(m.filter));
  } else {
    throw new RangeError('not an extension request');
  }
  parts.push(Buffer.alloc(m.pad ?? 0));
  const payload = Buffer.concat(parts);
  field(payload.length <= EXT_MAX_PAYLOAD);
  return frame(type, m.seq, m.framing ?? 'compact', m.tick ?? 0, payload);
}

// reader reads an extension payload front to back; a MalformedPacketError at the first fault.
function reader(p) {
  let i = 0;
  const r = {
    get left() { return p.length - i; },
    take(n) {
      if (i + n > p.length) throw new MalformedPacketError('ext_short');
      i += n;
      return p.subarray(i - n, i);
    },
    u8: () => r.take(1)[0],
    u16: () => r.take(2).readUInt16BE(),
    u32: () => r.take(4).readUInt32BE(),
    check(ok) { if (!ok) throw new MalformedPacketError('ext_field'); },
    text(most) {
      const b = r.take(r.u8());
      r.check(b.length <= most && validText(b));
      return b.toString('utf8');
    },
    code() {
      const s = r.take(6).toString('latin1');
      r.check(validCode(s));
      return s;
    },
    blob() {
      const n = r.u8();
      r.check(n <= 64);
      return new Uint8Array(r.take(n));
    },
    tags() {
      const n = r.u8(), t = {};
      r.check(n <= 4);
      for (let k = 0; k < n; k++) {
        const key = r.text(16), value = r.text(32);
        r.check(validKey(key) && !Object.hasOwn(t, key));
        t[key] = value;
      }
      return t;
    },
  };
  return r;
}

function decodeExt(payload, m) {
  const r = reader(Buffer.from(payload.buffer, payload.byteOffset, payload.length));
  if (r.u8() !== 1) throw new MalformedPacketError('ext_version');
  Object.assign(m, { token: null, code: '', address: '', seatToken: null, next: 0, reason: 'unspecified' });
  delete m.compressed;
  switch (m.type) {
    case 'EXT_ROOMS': {
      m.next = r.u32();
      const n = r.u8();
      for (let k = 0; k < n; k++) {
        if (r.left < 22) throw new MalformedPacketError('ext_short'); // n is backed before it is read
        const id = r.u32(), players = r.u16(), maxPlayers = r.u16(), port = r.u16(), state = r.u8(), flags = r.u8();
        r.check(state <= 3 && (flags & ~1) === 0);
        const code = r.code(), name = r.text(32), mode = r.text(16), map = r.text(32);
        m.rooms.push({ id, players, maxPlayers, port, state: ROOM_STATES[state], name, mode, map, tags: r.tags(),
          code, password: flags === 1 });
      }
      break;
    }
    case 'EXT_SEAT': {
      m.room = r.u32(); m.port = r.u16(); m.code = r.code();
      const a = r.take(r.u8());
      r.check(a.length === 0 || a.length === 4 ||
        (a.length === 16 && !(a.subarray(0, 10).every((x) => x === 0) && a[10] === 0xff && a[11] === 0xff)));
      if (a.length === 4) m.address = a.join('.');
      if (a.length === 16) m.address = new URL(`http://[${a.toString('hex').match(/..../g).join(':')}]`).hostname.slice(1, -1);
      m.seatToken = r.blob();
      break;
    }
    case 'EXT_REFUSED':
      m.reason = REASONS[r.u8()] ?? 'unspecified';
      break;
    case 'EXT_ADMITTED':
      m.room = r.u32();
      break;
    default: // EXT_RETRY
      m.token = r.blob();
      r.check(m.token.length > 0);
  }
  if (r.left !== 0) throw new MalformedPacketError('ext_trailing');
  return m;
}

/** Inflates one LZ4 block (no frame) to exactly size bytes. */
export function lz4Decompress(src, size) {
  const bad = () => new MalformedPacketError('compression');
  const out = Buffer.alloc(size);
  let i = 0, o = 0;
  const length = (len) => {
    for (;;) {
      if (i >= src.length) throw bad();
      const x = src[i++];
      len += x;
      if (x !== 255) return len;
    }
  };
  for (;;) {
    if (i >= src.length) throw bad();
    const token = src[i++];
    let lit = token >> 4;
    if (lit === 15) lit = length(lit);
    if (i + lit > src.length || o + lit > size) throw bad();
    out.set(src.subarray(i, i + lit), o);
    i += lit; o += lit;
    if (i === src.length) break; // the last sequence is literals only
    if (i + 2 > src.length) throw bad();
    const off = src[i] | (src[i + 1] << 8);
    i += 2;
    let ml = token & 15;
    if (ml === 15) ml = length(ml);
    ml += 4;
    if (off === 0 || off > o || o + ml > size) throw bad();
    for (let k = 0; k < ml; k++, o++) out[o] = out[o - off]; // a match may overlap what it writes
  }
  if (o !== size) throw bad();
  return out;
}

// --- client ------------------------------------------------------------------

function splitAddress(lobby) {
  const at = lobby.lastIndexOf(':');
  if (at < 0) throw new TypeError(`lobby address ${lobby} has no port`);
  return [lobby.slice(0, at).replace(/^\[|\]$/g, '') || '127.0.0.1', Number(lobby.slice(at + 1))];
}

const awaiting = {
  [MessageType.LIST_ROOMS]: 'ROOM_LIST',
  [MessageType.CREATE_ROOM]: 'ROOM_CREATED or JOIN_FAILED',
  [MessageType.JOIN_ROOM]: 'JOIN_SUCCESS or JOIN_FAILED',
};

function answers(type, room, m) {
  switch (type) {
    case MessageType.LIST_ROOMS: return m.type === 'ROOM_LIST';
    case MessageType.CREATE_ROOM: return m.type === 'ROOM_CREATED' || m.type === 'JOIN_FAILED';
    default: return m.type === 'JOIN_FAILED' || (m.type === 'JOIN_SUCCESS' && m.room === room);
  }
}

function checkFilter(filter) {
  if (filter && (filter.mode || filter.map || filter.namePrefix || (filter.tags && Object.keys(filter.tags).length))) {
    throw new NotSupportedError('filtering by mode, map, name or tags is not supported by this lobby');
  }
}

const matches = (filter) => (r) => !filter ||
  ((filter.state === undefined || r.state === filter.state) && r.maxPlayers - r.players >= (filter.freeSeats ?? 0));

/**
 * Shows seat's token to its room from socket, a dgram socket, until the
 * room answers EXT_ADMITTED, attempts times at most, each waiting timeout
 * ms: the room's door then admits the socket's address into the seat,
 * wherever it is (a new socket takes the seat back after a drop). A socket
 * connected to seat.address, seat.port is used as it is; an unconnected one
 * sends to the seat's address and port, stays unconnected, and takes
 * EXT_ADMITTED only from that address and port. Call it before reading
 * socket for the game. Rejects with a TimeoutError when no EXT_ADMITTED
 * comes (a door drops a token it does not take unanswered), a RangeError
 * for a seat without a token (a seed lobby's).
 */
export async function present(socket, seat, { timeout = DEFAULT_TIMEOUT, attempts = DEFAULT_ATTEMPTS } = {}) {
  const op = `present ${seat.address}:${seat.port} room ${seat.room}`;
  if (!seat.token?.length) throw new RangeError(`${op}: the seat has no token (a seed lobby's)`);
  timeout = timeout > 0 ? timeout : DEFAULT_TIMEOUT;
  attempts = attempts > 0 ? attempts : DEFAULT_ATTEMPTS;
  const pkt = encodeExt({ type: MessageType.EXT_PRESENT, seq: 0, seatToken: seat.token });
  const room = await roomPath(socket, seat);
  const roomIP = room && unmapped(room);
  let admitted = () => {};
  const onMessage = (b, from) => {
    if (room && (from.port !== seat.port || unmapped(from.address) !== roomIP)) return; // not the room
    let m;
    try { m = decode(b); } catch { return; }
    if (m.type === 'EXT_ADMITTED' && m.room === seat.room) admitted();
  };
  const onError = () => {}; // the room's port refused a datagram: the next attempt may still reach it
  socket.on('message', onMessage);
  socket.on('error', onError);
  try {
    for (let k = 0; k < attempts; k++) {
      const ok = await new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeout);
        admitted = () => { clearTimeout(timer); resolve(true); };
        if (room) socket.send(pkt, seat.port, room, () => {});
        else socket.send(pkt, () => {});
      });
      if (ok) return;
    }
  } finally {
    socket.off('message', onMessage);
    socket.off('error', onError);
  }
  throw new TimeoutError(`${op}: timeout: no EXT_ADMITTED after ${attempts} attempts of ${timeout}ms`);
}

/**
 * The address present sends seat's room to: none for a socket connected
 * (to the room), else the seat's address, in the form socket's family
 * sends to (an IPv4 one mapped for an IPv6 socket).
 */
async function roomPath(socket, seat) {
  try {
    socket.remoteAddress();
    return null;
  } catch { /* not connected */ }
  const v6 = socket.address().family === 'IPv6';
  const address = isIP(seat.address) ? seat.address : (await lookup(seat.address, { family: v6 ? 6 : 4 })).address;
  return v6 && isIP(address) === 4 ? `::ffff:${address}` : address;
}

/** address without its zone, an IPv4-mapped IPv6 address as its IPv4 one. */
const unmapped = (address) => {
  const a = address.split('%')[0].toLowerCase();
  return a.startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a;
};

/** A client of one lobby, from one UDP socket; its requests may run concurrently. */
export class Client {
  /** Resolves the lobby's address ("host:port") and opens a socket to it. */
  static async connect(lobby, { timeout = DEFAULT_TIMEOUT, attempts = DEFAULT_ATTEMPTS, framing = 'compact' } = {}) {
    const [host, port] = splitAddress(lobby);
    const address = isIP(host) ? host : (await lookup(host)).address;
    const socket = dgram.createSocket(isIP(address) === 6 ? 'udp6' : 'udp4');
    await new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(port, address, () => { socket.off('error', reject); resolve(); });
    });
    return new Client(socket, `${host}:${port}`, address, {
      timeout: timeout > 0 ? timeout : DEFAULT_TIMEOUT, attempts: attempts > 0 ? attempts : DEFAULT_ATTEMPTS, framing,
    });
  }

  constructor(socket, name, address, options) {
    this.lobby = name;
    this.address = address;
    this.options = options;
    this.socket = socket;
    this.pending = new Map(); // seq -> request in flight
    this.seq = Math.floor(Math.random() * 0x10000);
    this.answered = false; // the lobby has answered this client once
    this.closed = false;
    this.ext = null; // a promise: whether the lobby speaks the extension
    this.token = null; // the lobby's retry token
    this.client = randomBytes(8); // this client's id, which its seat tokens bind
    socket.on('message', (b) => this.#received(b));
    socket.on('error', (err) => {
      if (err.code === 'ECONNREFUSED') for (const p of this.pending.values()) p.refused();
    });
  }

  /** Every room filter matches, page after page (a seed lobby filters by state and freeSeats only). */
  async list(filter = {}) {
    const rooms = [];
    let cursor = 0;
    for (let k = 0; k < MAX_PAGES; k++) {
      let page;
      try {
        page = await this.page(filter, cursor);
      } catch (e) {
        if (!(e instanceof NotSupportedError)) throw e;
        checkFilter(filter);
        return (await this.#seed(MessageType.LIST_ROOMS)).rooms.filter(matches(filter));
      }
      rooms.push(...page.rooms);
      if (page.next === 0 || page.next <= cursor) break;
      cursor = page.next;
    }
    return rooms;
  }

  /** One page of the rooms filter matches after cursor, and the next page's cursor (0 after the last). */
  async page(filter = {}, cursor = 0, limit = 0) {
    const r = await this.#ask(`list ${this.lobby}`, MessageType.EXT_LIST, { filter, cursor, limit });
    return { rooms: r.rooms, next: r.next };
  }

  /** Starts a room and holds a seat in it for this client. */
  async create(options = {}) {
    let r;
    try {
      r = await this.#ask(`create ${this.lobby}`, MessageType.EXT_CREATE, { client: this.client, options });
    } catch (e) {
      if (!(e instanceof NotSupportedError) || options.private || options.password) throw e;
      return this.#seed(MessageType.CREATE_ROOM);
    }
    return this.#extSeat(r);
  }

  /** Holds a seat in room (an id, or a join code), with its password if it has one. */
  async join(room, { password = '' } = {}) {
    if (typeof room === 'string') {
      const code = room.toUpperCase();
      const op = `join ${this.lobby} code ${code}`;
      if (!validCode(code)) throw new RangeError(`${op}: not a join code (6 letters of ${CODE_ALPHABET})`);
      return this.#extSeat(await this.#ask(op, MessageType.EXT_JOIN, { client: this.client, code, password }));
    }
    let r;
    try {
      r = await this.#ask(this.#op(MessageType.JOIN_ROOM, room), MessageType.EXT_JOIN, { client: this.client, room, password });
    } catch (e) {
      if (!(e instanceof NotSupportedError) || password) throw e;
      return this.#seed(MessageType.JOIN_ROOM, room);
    }
    return this.#extSeat(r);
  }

  /** Holds a seat in the fullest joinable room filter matches, or in a new one. */
  async quickJoin(filter = {}) {
    try {
      return this.#extSeat(await this.#ask(`quick ${this.lobby}`, MessageType.EXT_QUICK, { client: this.client, filter }));
    } catch (e) {
      if (!(e instanceof NotSupportedError)) throw e;
    }
    const rooms = (await this.list(filter)).sort((a, b) => b.players - a.players);
    for (const r of rooms) {
      if ((r.state === 'waiting' || r.state === 'countdown') && r.players < r.maxPlayers) {
        try { return await this.join(r.id); } catch (e) { if (!(e instanceof FoyerError)) throw e; }
      }
    }
    return this.create();
  }

  /** Closes the socket; requests in flight fail with ClosedError. */
  close() {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) p.close();
    this.socket.close();
  }

  #op(type, room) {
    if (type === MessageType.LIST_ROOMS) return `list ${this.lobby}`;
    if (type === MessageType.CREATE_ROOM) return `create ${this.lobby}`;
    return `join ${this.lobby} room ${room}`;
  }

  async #seed(type, room = 0) {
    if (type === MessageType.CREATE_ROOM && !this.answered) await this.#seed(MessageType.LIST_ROOMS);
    const op = this.#op(type, room);
    const m = await this.#exchange({ op, awaiting: awaiting[type],
      pkt: (seq) => encodeRequest(type, seq, { framing: this.options.framing, room }),
      match: (m) => answers(type, room, m) });
    this.answered = true;
    if (m.type === 'JOIN_FAILED') {
      const hint = type === MessageType.CREATE_ROOM ? 'the lobby could not start a room' : 'room unknown, full, or not waiting';
      throw new RefusedError(`${op}: lobby answered JOIN_FAILED (${hint})`);
    }
    if (type === MessageType.LIST_ROOMS) return m;
    return { room: m.room, address: this.address, port: m.port, token: null, expires: null, code: '' };
  }

  #extSeat(r) {
    const t = r.seatToken;
    const expires = t && t.length === 41 && t[0] === 1 ? new Date(Buffer.from(t).readUInt32BE(21) * 1000) : null;
    return { room: r.room, address: r.address || this.address, port: r.port, token: t, expires, code: r.code };
  }

  #extAsk(op, type, fields, timeout, attempts, probe = false) {
    const token = this.token;
    const want = type === MessageType.EXT_LIST ? 'EXT_ROOMS' : 'EXT_SEAT';
    return { op, awaiting: `${want} or EXT_REFUSED`, timeout, attempts, probe,
      pkt: (seq) => {
        const m = { ...fields, type, seq, framing: this.options.framing, token };
        const b = encodeExt(m);
        return token ? b : encodeExt({ ...m, pad: Math.max(PAD_TO - b.length, 0) });
      },
      match: (m) => m.type === want || m.type === 'EXT_RETRY' || m.type === 'EXT_REFUSED' };
  }

  // probe finds out, once, whether the lobby speaks the extension.
  async #probe(op) {
    this.ext ??= this.#exchange(this.#extAsk(op, MessageType.EXT_LIST, { limit: 1 },
      Math.min(this.options.timeout, PROBE_TIMEOUT), 1, true)).then((r) => {
      if (r.type === 'EXT_RETRY') this.token = r.token;
      return true;
    }, (e) => {
      if (e instanceof TimeoutError || e instanceof UnreachableError) return false;
      this.ext = null;
      throw e;
    });
    if (!(await this.ext)) throw new NotSupportedError(`${op}: the lobby does not speak the extension`);
  }

  async #ask(op, type, fields) {
    await this.#probe(op);
    for (let k = 0; k < 3; k++) {
      const r = await this.#exchange(this.#extAsk(op, type, fields, this.options.timeout, this.options.attempts));
      if (r.type === 'EXT_RETRY') {
        this.token = r.token;
        continue;
      }
      if (r.type === 'EXT_REFUSED') throw new RefusedError(`${op}: lobby refused: ${r.reason}`, r.reason);
      this.answered = true;
      return r;
    }
    throw new TimeoutError(`${op}: the lobby asks for a retry token again and again`);
  }

  #received(b) {
    let m;
    try { m = decode(b); } catch { return; }
    this.pending.get(m.seq)?.reply(m);
  }

  #register(entry) {
    do this.seq = (this.seq + 1) & 0xffff; while (this.pending.has(this.seq));
    this.pending.set(this.seq, entry);
    return this.seq;
  }

  // exchange sends a.pkt(seq) up to a.attempts times, each waiting
  // a.timeout for a reply a.match takes. A probe also sends a seed LIST
  // once, whose answer leaves the extension's PROBE_GRACE more.
  async #exchange(a) {
    const { timeout = this.options.timeout, attempts = this.options.attempts } = a;
    if (this.closed) throw new ClosedError(`${a.op}: client closed`);
    let outcome, refused = false, listed = false, wake = () => {};
    const seq = this.#register({ reply: (m) => { if (a.match(m)) wake({ kind: 'reply', m }); },
      refused: () => wake({ kind: 'refused' }), close: () => wake({ kind: 'closed' }) });
    const seqs = [seq];
    try {
      if (a.probe) {
        seqs.push(this.#register({ reply: (m) => { if (m.type === 'ROOM_LIST' && !listed) { listed = true; wake({ kind: 'listed' }); } },
          refused: () => {}, close: () => {} }));
        this.socket.send(encodeRequest(MessageType.LIST_ROOMS, seqs[1], { framing: this.options.framing }));
      }
      const pkt = a.pkt(seq);
      for (let attempt = 0; attempt < attempts; attempt++) {
        if (attempt > 0 && refused) await new Promise((r) => setTimeout(r, Math.min(REFUSED_PAUSE, timeout)));
        if (this.closed) throw new ClosedError(`${a.op}: client closed`);
        const end = Date.now() + timeout;
        this.socket.send(pkt, (err) => { if (err) wake({ kind: err.code === 'ECONNREFUSED' ? 'refused' : 'closed' }); });
        let left = timeout;
        do {
          outcome = await new Promise((resolve) => {
            const timer = setTimeout(() => resolve({ kind: 'timeout' }), Math.max(left, 0));
            wake = (o) => { clearTimeout(timer); wake = () => {}; resolve(o); };
          });
          left = outcome.kind === 'listed' ? Math.min(end - Date.now(), PROBE_GRACE) : left;
        } while (outcome.kind === 'listed');
        refused = outcome.kind === 'refused';
        if (outcome.kind === 'reply') return outcome.m;
        if (outcome.kind === 'closed') throw new ClosedError(`${a.op}: client closed`);
      }
    } finally {
      for (const s of seqs) this.pending.delete(s);
    }
    if (refused) throw new UnreachableError(`${a.op}: nothing listens on that port (port unreachable)`);
    throw new TimeoutError(`${a.op}: timeout: no ${a.awaiting} after ${attempts} attempts of ${timeout}ms`);
  }
}
