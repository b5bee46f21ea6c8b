// Against a real lobby: FOYER_LOBBY=host:port names a running foyer serve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, RefusedError } from '../index.js';

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
