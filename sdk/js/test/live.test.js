// Against a real lobby: FOYER_LOBBY=host:port names a running foyer serve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { isIP } from 'node:net';
import { Client, present, RefusedError, TimeoutError } from '../index.js';

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

// roomSocket is a fresh socket connected to seat's room.
async function roomSocket(seat) {
  const s = dgram.createSocket(isIP(seat.address) === 6 ? 'udp6' : 'udp4');
  await new Promise((resolve) => s.connect(seat.port, seat.address, resolve));
  return s;
}

test('a seat token presented from a new socket is admitted', { skip: !lobby && 'FOYER_LOBBY is not set' }, async () => {
  const a = await Client.connect(lobby);
  const seat = await a.create();
  a.close();
  for (let k = 0; k < 2; k++) { // in, and back into the seat from another socket
    const s = await roomSocket(seat);
    try { await present(s, seat, { timeout: 1000 }); } finally { s.close(); }
  }
  const forged = Buffer.from(seat.token);
  forged[forged.length - 1] ^= 1; // its signature no longer holds: the door drops it unanswered
  const s = await roomSocket(seat);
  try {
    await assert.rejects(present(s, { ...seat, token: forged }, { timeout: 300, attempts: 2 }), TimeoutError);
  } finally { s.close(); }
});
