// The client against a scripted lobby on a real loopback socket: retries
// reuse the sequence id, strays are dropped, refusals and silence are
// typed errors, extension verbs say they are not supported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import {
  Client, crc32, decode, RefusedError, TimeoutError, UnreachableError, NotSupportedError,
} from '../index.js';

function reply(req, type, payload = Buffer.alloc(0)) {
  const b = Buffer.alloc(8 + payload.length + 4);
  b[0] = 2; b[1] = type;
  b.writeUInt16BE(decode(req).seq, 2);
  b.writeUInt16BE(payload.length, 4); b.writeUInt16BE(payload.length, 6);
  payload.copy(b, 8);
  b.writeUInt32BE(crc32(b.subarray(0, 8 + payload.length)), 8 + payload.length);
  return b;
}

const roomPort = (room, port) => { const p = Buffer.alloc(6); p.writeUInt32BE(room); p.writeUInt16BE(port, 4); return p; };

// lobby answers each request with script(index, request) -> datagrams.
async function lobby(t, script) {
  const s = dgram.createSocket('udp4');
  const requests = [];
  s.on('message', (b, peer) => {
    requests.push(b);
    for (const out of script(requests.length - 1, b)) s.send(out, peer.port, peer.address);
  });
  await new Promise((r) => s.bind(0, '127.0.0.1', r));
  t.after(() => s.close());
  return { addr: `127.0.0.1:${s.address().port}`, requests };
}

test('a retry reuses the sequence id and strays are dropped', async (t) => {
  const l = await lobby(t, (i, req) => {
    if (i === 0) return [];
    const stray = reply(req, 0x45, roomPort(1, 9));
    stray[stray.length - 1] ^= 1;
    return [stray, reply(req, 0x45, roomPort(7, 9)), reply(req, 0x45, roomPort(1, 30000))];
  });
  const c = await Client.connect(l.addr, { timeout: 200 });
  t.after(() => c.close());
  const seat = await c.join(1);
  assert.deepEqual([seat.room, seat.address, seat.port], [1, '127.0.0.1', 30000]);
  assert.equal(l.requests.length, 2);
  assert.deepEqual(l.requests[0], l.requests[1]);
});

test('JOIN_FAILED is a RefusedError', async (t) => {
  const l = await lobby(t, (i, req) => [reply(req, 0x46)]);
  const c = await Client.connect(l.addr, { timeout: 500 });
  t.after(() => c.close());
  await assert.rejects(c.join(3), (e) => e instanceof RefusedError && e.reason === 'unspecified');
});

test('silence is a TimeoutError after every attempt', async (t) => {
  const l = await lobby(t, () => []);
  const c = await Client.connect(l.addr, { timeout: 50, attempts: 3 });
  t.after(() => c.close());
  await assert.rejects(c.list(), TimeoutError);
  assert.equal(l.requests.length, 3);
  assert.equal(new Set(l.requests.map((r) => r.toString('hex'))).size, 1);
});

test('a closed port is unreachable', async (t) => {
  const s = dgram.createSocket('udp4');
  await new Promise((r) => s.bind(0, '127.0.0.1', r));
  const port = s.address().port;
  await new Promise((r) => s.close(r));
  const c = await Client.connect(`127.0.0.1:${port}`, { timeout: 1000 });
  t.after(() => c.close());
  await assert.rejects(c.list(), UnreachableError);
});

test('create lists first, and the legacy framing is sent', async (t) => {
  const l = await lobby(t, (i, req) => [decode(req).type === 'LIST_ROOMS'
    ? reply(req, 0x41, Buffer.from([0, 0])) : reply(req, 0x43, roomPort(5, 30005))]);
  const c = await Client.connect(l.addr, { framing: 'legacy', timeout: 500 });
  t.after(() => c.close());
  assert.equal((await c.create()).room, 5);
  assert.deepEqual(l.requests.map((r) => decode(r).type), ['LIST_ROOMS', 'CREATE_ROOM']);
  assert.ok(l.requests.every((r) => r[0] === 0xa3));
});

test('extension verbs say not supported', async (t) => {
  const l = await lobby(t, () => []);
  const c = await Client.connect(l.addr, { timeout: 50 });
  t.after(() => c.close());
  await assert.rejects(c.join('ABCDEF'), NotSupportedError);
  await assert.rejects(c.quickJoin(), NotSupportedError);
  await assert.rejects(c.create({ name: 'x' }), NotSupportedError);
  await assert.rejects(c.list({ mode: 'ctf' }), NotSupportedError);
  assert.equal(l.requests.length, 0);
});

test('concurrent requests each get their own reply', async (t) => {
  const l = await lobby(t, (i, req) => [reply(req, 0x45, roomPort(decode(req).room, 30000 + decode(req).room))]);
  const c = await Client.connect(l.addr, { timeout: 500 });
  t.after(() => c.close());
  const seats = await Promise.all([1, 2, 3].map((id) => c.join(id)));
  assert.deepEqual(seats.map((s) => s.port), [30001, 30002, 30003]);
});
