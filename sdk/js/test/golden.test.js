// The shared golden packets: each decodes to its fields, each request
// encodes to its bytes, each malformed one is refused for its reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { decode, encodeRequest, MessageType, MalformedPacketError } from '../index.js';

const golden = JSON.parse(readFileSync(new URL('../../testdata/golden.json', import.meta.url)));
const requests = new Set(['LIST_ROOMS', 'CREATE_ROOM', 'JOIN_ROOM']);

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
