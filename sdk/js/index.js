// A client of Foyer lobbies for Node: list a lobby's rooms, create one or
// join one, and get a seat: where the room's game server listens.
//
// Each request is sent up to `attempts` times, `timeout` ms apart, with
// the same sequence id, so a lobby that already acted on it answers from
// its retry cache instead of acting twice. Replies are matched by sequence
// id; anything else reaching the socket (strays, bad CRCs) is dropped.
// The native protocol (both framings, LZ4-compressed lists) is in
// encodeRequest and decode.

import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export const DEFAULT_TIMEOUT = 5000;
export const DEFAULT_ATTEMPTS = 3;
export const MAX_ROOMS = 5037;
const REFUSED_PAUSE = 250; // after "port unreachable", before trying again

export const MessageType = Object.freeze({
  LIST_ROOMS: 0x40, ROOM_LIST: 0x41, CREATE_ROOM: 0x42, ROOM_CREATED: 0x43,
  JOIN_ROOM: 0x44, JOIN_SUCCESS: 0x45, JOIN_FAILED: 0x46,
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
/** The lobby said no (JOIN_FAILED); reason says why when the lobby does. */
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
  const n = type === MessageType.JOIN_ROOM ? 4 : 0;
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
  if (n) b.writeUInt32BE(room >>> 0, hl);
  b.writeUInt32BE(crc32(b.subarray(0, hl + n)), hl + n);
  return b;
}

const isRequest = (t) => t === 0x40 || t === 0x42 || t === 0x44;

function holds(t, n) {
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
  if (type < 0x40 || type > 0x46) throw new MalformedPacketError('unknown_type');
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
    socket.on('message', (b) => this.#received(b));
    socket.on('error', (err) => {
      if (err.code === 'ECONNREFUSED') for (const p of this.pending.values()) p.refused();
    });
  }

  /** The lobby's rooms, those filter matches (a seed lobby filters by state and freeSeats only). */
  async list(filter) {
    checkFilter(filter);
    const m = await this.#do(MessageType.LIST_ROOMS);
    return m.rooms.filter(matches(filter));
  }

  /** Starts a room and holds a seat in it for this client. */
  async create(options = {}) {
    if (options.name || options.mode || options.map || options.private || options.password ||
        (options.tags && Object.keys(options.tags).length)) {
      throw new NotSupportedError('room options are not supported by this lobby');
    }
    if (!this.answered) await this.list(); // a lobby starts few rooms for senders it never answered
    return this.#seat(MessageType.CREATE_ROOM, 0, await this.#do(MessageType.CREATE_ROOM));
  }

  /** Holds a seat in room (an id; a code needs the extension). */
  async join(room, { password } = {}) {
    if (typeof room === 'string') throw new NotSupportedError('joining by code is not supported by this lobby');
    if (password) throw new NotSupportedError('passwords are not supported by this lobby');
    return this.#seat(MessageType.JOIN_ROOM, room, await this.#do(MessageType.JOIN_ROOM, room));
  }

  /** Joins the fullest room filter matches, or creates one: needs the extension. */
  async quickJoin(_filter) {
    throw new NotSupportedError('quick join is not supported by this lobby');
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

  #seat(type, room, m) {
    if (m.type === 'JOIN_FAILED') {
      const hint = type === MessageType.CREATE_ROOM ? 'the lobby could not start a room' : 'room unknown, full, or not waiting';
      throw new RefusedError(`${this.#op(type, room)}: lobby answered JOIN_FAILED (${hint})`);
    }
    return { room: m.room, address: this.address, port: m.port, token: null, expires: null };
  }

  #received(b) {
    let m;
    try { m = decode(b); } catch { return; }
    const p = this.pending.get(m.seq);
    if (p && answers(p.type, p.room, m)) p.reply(m);
  }

  async #do(type, room = 0) {
    if (this.closed) throw new ClosedError(`${this.#op(type, room)}: client closed`);
    do this.seq = (this.seq + 1) & 0xffff; while (this.pending.has(this.seq));
    const seq = this.seq;
    const pkt = encodeRequest(type, seq, { framing: this.options.framing, room });
    const { timeout, attempts } = this.options;
    let refused = false;
    try {
      for (let attempt = 0; attempt < attempts; attempt++) {
        if (attempt > 0 && refused) await new Promise((r) => setTimeout(r, Math.min(REFUSED_PAUSE, timeout)));
        if (this.closed) throw new ClosedError(`${this.#op(type, room)}: client closed`);
        const outcome = await new Promise((resolve) => {
          const timer = setTimeout(() => resolve({ kind: 'timeout' }), timeout);
          const end = (o) => { clearTimeout(timer); resolve(o); };
          this.pending.set(seq, { type, room, reply: (m) => end({ kind: 'reply', m }),
            refused: () => end({ kind: 'refused' }), close: () => end({ kind: 'closed' }) });
          this.socket.send(pkt, (err) => { if (err) end({ kind: err.code === 'ECONNREFUSED' ? 'refused' : 'closed' }); });
        });
        refused = outcome.kind === 'refused';
        if (outcome.kind === 'reply') {
          this.answered = true;
          return outcome.m;
        }
        if (outcome.kind === 'closed') throw new ClosedError(`${this.#op(type, room)}: client closed`);
      }
    } finally {
      this.pending.delete(seq);
    }
    if (refused) throw new UnreachableError(`${this.#op(type, room)}: nothing listens on that port (port unreachable)`);
    throw new TimeoutError(`${this.#op(type, room)}: timeout: no ${awaiting[type]} after ${attempts} attempts of ${timeout}ms`);
  }
}
