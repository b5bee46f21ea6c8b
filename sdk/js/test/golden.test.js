// The shared golden packets: each decodes to its fields, each request
// encodes to its bytes, each malformed one is refused for its reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { decode, encodeExt, encodeRequest, MessageType, MalformedPacketError, REASONS, ROOM_STATES } from '../index.js';

const golden = JSON.parse(readFileSync(new URL('../../testdata/golden.json', import.meta.url)));
const requests = new Set(['LIST_ROOMS', 'CREATE_ROOM', 'JOIN_ROOM']);
const extRequests = new Set(['EXT_LIST', 'EXT_CREATE', 'EXT_JOIN', 'EXT_QUICK', 'EXT_PRESENT']);
const hex = (s) => (s ? Buffer.from(s, 'hex') : null);
const filterOf = (f) => f && { state: f.states ? ROOM_STATES[Math.log2(f.states)] : undefined, freeSeats: f.min_free,
  mode: f.mode, map: f.map, namePrefix: f.name_prefix, tags: Object.fromEntries(f.tags) };

test('packets decode to their fields', () => {
  for (const g of golden.packets) {
    const m = decode(Buffer.from(g.hex, 'hex'));
    assert.deepEqual(
      [m.framing, m.type, m.seq, m.tick, m.compressed, m.room, m.port],
      [g.framing, g.type, g.seq, g.tick ?? 0, g.compressed ?? false, g.room ?? 0, g.port ?? 0], g.name);
    assert.deepEqual(m.rooms.map((r) => ({ id: r.id, players: r.players, max_players: r.maxPlayers, port: r.port, state: r.state })),
      g.rooms ?? [], g.name);
  }
});

test('requests encode to their bytes', () => {
  const sent = golden.packets.filter((g) => requests.has(g.type));
  assert.ok(sent.length >= 6);
  for (const g of sent) {
    const b = encodeRequest(MessageType[g.type], g.seq, { framing: g.framing, tick: g.tick ?? 0, room: g.room ?? 0 });
    assert.equal(b.toString('hex'), g.hex, g.name);
  }
});

test('malformed packets are refused for their reason', () => {
  for (const g of golden.malformed) {
    assert.throws(() => decode(Buffer.from(g.hex, 'hex')),
      (e) => e instanceof MalformedPacketError && e.reason === g.reason, g.name);
  }
});

test('every prefix of a packet is refused', () => {
  for (const g of golden.packets) {
    const b = Buffer.from(g.hex, 'hex');
    for (let i = 0; i < b.length; i++) assert.throws(() => decode(b.subarray(0, i)), MalformedPacketError);
  }
});

test('extension requests encode to their bytes', () => {
  const sent = golden.ext.filter((g) => extRequests.has(g.msg.type));
  assert.ok(sent.length >= 10);
  for (const { name, hex: want, msg: m } of sent) {
    const options = m.meta && { name: m.meta.name, mode: m.meta.mode, map: m.meta.map, tags: Object.fromEntries(m.meta.tags),
      private: m.private, password: m.password };
    const b = encodeExt({ framing: m.framing, type: m.type, seq: m.seq, tick: m.tick, token: hex(m.token), pad: m.pad,
      client: hex(m.client) ?? undefined, filter: filterOf(m.filter), cursor: m.cursor, limit: m.limit, options,
      password: options ? '' : m.password, room: m.room, code: m.code, seatToken: hex(m.seat_token) ?? undefined });
    assert.equal(b.toString('hex'), want, name);
  }
});

test('extension replies decode to their fields', () => {
  const got = golden.ext.filter((g) => !extRequests.has(g.msg.type));
  assert.ok(got.length >= 9);
  for (const g of got) {
    const b = Buffer.from(g.hex, 'hex');
    const m = decode(b);
    const fields = { framing: m.framing, type: m.type, seq: m.seq, tick: m.tick,
      token: m.token && Buffer.from(m.token).toString('hex'), room: m.room, code: m.code, port: m.port, addr: m.address,
      seat_token: m.seatToken && Buffer.from(m.seatToken).toString('hex'), next: m.next,
      entries: m.rooms.map((r) => ({ id: r.id, players: r.players, max_players: r.maxPlayers, port: r.port, state: r.state,
        password: r.password, code: r.code, name: r.name, mode: r.mode, map: r.map, tags: Object.entries(r.tags) })),
      reason: REASONS.indexOf(m.reason) };
    for (const [k, v] of Object.entries(fields)) if (k !== 'seq' && (!v || (Array.isArray(v) && !v.length))) delete fields[k];
    assert.deepEqual(fields, g.msg, g.name);
    for (let i = 0; i < b.length; i++) assert.throws(() => decode(b.subarray(0, i)), MalformedPacketError);
  }
});

test('malformed extension replies are refused for their reason', () => {
  for (const g of golden.ext_malformed) {
    assert.throws(() => decode(Buffer.from(g.hex, 'hex')),
      (e) => e instanceof MalformedPacketError && e.reason === g.reason, g.name);
  }
});
