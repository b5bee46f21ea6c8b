// Against a real lobby: FOYER_LOBBY=host:port names a running foyer serve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { isIP } from 'node:net';
import { readFileSync } from 'node:fs';
import { Client, crc32, decode, present, RefusedError, TimeoutError } from '../index.js';

const lobby = process.env.FOYER_LOBBY;

for (const framing of ['compact', 'legacy']) {
  test(`list, create, join and a refusal in the ${framing} framing`, { skip: !lobby && 'FOYER_LOBBY is not set' }, async (t) => {
    const a = await Client.connect(lobby, { framing });
    const b = await Client.connect(lobby, { framing });
    t.after(() => { a.close(); b.close(); });
    const seat = await a.create();
    assert.ok(seat.port > 0);
    const rooms = await b.list({ state: 'waiting' });
    assert.ok(rooms.some((r) => r.id === seat.room), `room ${seat.room} not listed`);
    const joined = await b.join(seat.room);
    assert.deepEqual([joined.room, joined.port], [seat.room, seat.port]);
    await assert.rejects(b.join(0xfffffff0), RefusedError);
  });
}

for (const framing of ['compact', 'legacy']) {
  test(`a name, a filter, a code, a password and quick join in the ${framing} framing`,
    { skip: !lobby && 'FOYER_LOBBY is not set' }, async (t) => {
      const a = await Client.connect(lobby, { framing });
      const b = await Client.connect(lobby, { framing });
      t.after(() => { a.close(); b.close(); });
      const mode = `js${process.pid}${framing[0]}`; // this run's rooms only
      const seat = await a.create({ name: 'Node night', mode, tags: { sdk: 'js' }, password: 'pw' });
      assert.ok(seat.code && seat.token.length && seat.expires > new Date());
      const rooms = await b.list({ mode, namePrefix: 'Node' });
      assert.deepEqual(rooms.map((r) => [r.id, r.name, r.code, r.password, r.tags]),
        [[seat.room, 'Node night', seat.code, true, { sdk: 'js' }]]);
      assert.deepEqual(await b.list({ mode, namePrefix: 'Go' }), []);
      await assert.rejects(b.join(seat.code.toLowerCase(), { password: 'wrong' }),
        (e) => e instanceof RefusedError && e.reason === 'wrong_password');
      const joined = await b.join(seat.code.toLowerCase(), { password: 'pw' });
      assert.deepEqual([joined.room, joined.port, joined.code], [seat.room, seat.port, seat.code]);
      await assert.rejects(b.join(0xfffffff0), (e) => e instanceof RefusedError && e.reason === 'not_found');
      const quick = await b.quickJoin({ mode: `${mode}q` });
      assert.notEqual(quick.room, seat.room); // a room with a password is never quick joined
      assert.ok(quick.port > 0 && quick.token.length);
    });
}

// roomSocket opens a socket for seat's room: connected to it, or bound and
// unconnected, as a game's socket for many peers is.
async function roomSocket(seat, connected = true) {
  const s = dgram.createSocket(isIP(seat.address) === 6 ? 'udp6' : 'udp4');
  if (connected) await new Promise((resolve) => s.connect(seat.port, seat.address, resolve));
  else await new Promise((resolve) => s.bind(0, seat.address, resolve));
  return s;
}

// admitted is an EXT_ADMITTED for room: the golden one for room 7, its room
// and CRC replaced.
function admitted(room) {
  const golden = JSON.parse(readFileSync(new URL('../../testdata/golden.json', import.meta.url)));
  const b = Buffer.from(golden.ext.find((p) => p.name === 'EXT_ADMITTED room 7').hex, 'hex');
  b.writeUInt32BE(room, b.length - 8);
  b.writeUInt32BE(crc32(b.subarray(0, b.length - 4)), b.length - 4);
  return b;
}

test('a seat token presented from a new socket is admitted', { skip: !lobby && 'FOYER_LOBBY is not set' }, async () => {
  const a = await Client.connect(lobby);
  const seat = await a.create();
  a.close();
  for (let k = 0; k < 2; k++) { // in, and back into the seat from another socket
    const s = await roomSocket(seat);
    try { await present(s, seat, { timeout: 1000 }); } finally { s.close(); }
  }
  for (let k = 0; k < 2; k++) { // from a socket that is not connected, as a game's often is
    const s = await roomSocket(seat, false);
    try {
      await present(s, seat, { timeout: 1000 });
      assert.throws(() => s.remoteAddress(), /not connected/i); // present left it unconnected
    } finally { s.close(); }
  }
  const forged = Buffer.from(seat.token);
  forged[forged.length - 1] ^= 1; // its signature no longer holds: the door drops it unanswered
  const bad = { ...seat, token: forged };
  const s = await roomSocket(seat);
  try {
    await assert.rejects(present(s, bad, { timeout: 300, attempts: 2 }), TimeoutError);
  } finally { s.close(); }
  // An unconnected socket takes EXT_ADMITTED from the room's address and
  // port only: another sender's, for the right room, is dropped.
  const fake = admitted(seat.room);
  const m = decode(fake);
  assert.deepEqual([m.type, m.room], ['EXT_ADMITTED', seat.room]); // what a room would send
  const u = await roomSocket(seat, false);
  const other = await roomSocket(seat, false);
  const forger = setInterval(() => other.send(fake, u.address().port, u.address().address), 50);
  try {
    await assert.rejects(present(u, bad, { timeout: 300, attempts: 2 }), TimeoutError);
  } finally {
    clearInterval(forger);
    u.close();
    other.close();
  }
});
