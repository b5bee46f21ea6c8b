// The client against a scripted lobby on a real loopback socket: retries
// reuse the sequence id, strays are dropped, refusals and silence are
// typed errors; against a lobby of the extension the retry token is
// echoed and seats carry their token; against a seed lobby the verbs fall
// back or say they are not supported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import {
  Client, crc32, decode, PAD_TO, RefusedError, TimeoutError, UnreachableError, NotSupportedError,
} from '../index.js';

const seqOf = (req) => req.readUInt16BE(req[0] === 0xa3 ? 7 : 2);
const typeOf = (req) => req[req[0] === 0xa3 ? 6 : 1];

function reply(req, type, payload = Buffer.alloc(0)) {
  const b = Buffer.alloc(8 + payload.length + 4);
  b[0] = 2; b[1] = type;
  b.writeUInt16BE(seqOf(req), 2);
  b.writeUInt16BE(payload.length, 4); b.writeUInt16BE(payload.length, 6);
  payload.copy(b, 8);
  b.writeUInt32BE(crc32(b.subarray(0, 8 + payload.length)), 8 + payload.length);
  return b;
}

const roomPort = (room, port) => { const p = Buffer.alloc(6); p.writeUInt32BE(room); p.writeUInt16BE(port, 4); return p; };
const emptyList = (req) => reply(req, 0x41, Buffer.from([0, 0]));
const extToken = (req) => req.subarray(10, 10 + req[9]); // a compact extension request's retry token
const SEAT_TOKEN = Buffer.concat([Buffer.from([1]), Buffer.alloc(20), Buffer.from([0x65, 0x53, 0xf1, 0x00]), Buffer.alloc(16)]);
const seatReply = (req, room, addr = []) => reply(req, 0x83, Buffer.concat([Buffer.from([1]), roomPort(room, 30000),
  Buffer.from('ABCDEF'), Buffer.from([addr.length, ...addr, SEAT_TOKEN.length]), SEAT_TOKEN]));

// lobby answers each request with script(index, request) -> datagrams.
// Unless ext, it is a seed lobby: it drops extension requests (counted in ext).
async function lobby(t, script, ext = false) {
  const s = dgram.createSocket('udp4');
  const requests = [], dropped = [];
  s.on('message', (b, peer) => {
    if (typeOf(b) >= 0x80 && !ext) return dropped.push(b);
    requests.push(b);
    for (const out of script(requests.length - 1, b)) s.send(out, peer.port, peer.address);
  });
  await new Promise((r) => s.bind(0, '127.0.0.1', r));
  t.after(() => s.close());
  return { addr: `127.0.0.1:${s.address().port}`, requests, ext: dropped };
}

test('a retry reuses the sequence id and strays are dropped', async (t) => {
  let joins = 0;
  const l = await lobby(t, (i, req) => {
    if (typeOf(req) === 0x40) return [emptyList(req)];
    if (joins++ === 0) return [];
    const stray = reply(req, 0x45, roomPort(1, 9));
    stray[stray.length - 1] ^= 1;
    return [stray, reply(req, 0x45, roomPort(7, 9)), reply(req, 0x45, roomPort(1, 30000))];
  });
  const c = await Client.connect(l.addr, { timeout: 300 });
  t.after(() => c.close());
  const seat = await c.join(1);
  assert.deepEqual([seat.room, seat.address, seat.port], [1, '127.0.0.1', 30000]);
  assert.equal(l.requests.length, 3); // the probe's LIST, then the JOIN twice
  assert.deepEqual(l.requests[1], l.requests[2]);
  assert.equal(l.ext.length, 1);
});

test('JOIN_FAILED is a RefusedError', async (t) => {
  const l = await lobby(t, (i, req) => [typeOf(req) === 0x40 ? emptyList(req) : reply(req, 0x46)]);
  const c = await Client.connect(l.addr, { timeout: 500 });
  t.after(() => c.close());
  await assert.rejects(c.join(3), (e) => e instanceof RefusedError && e.reason === 'unspecified');
});

test('silence is a TimeoutError after every attempt', async (t) => {
  const l = await lobby(t, () => []);
  const c = await Client.connect(l.addr, { timeout: 50, attempts: 3 });
  t.after(() => c.close());
  await assert.rejects(c.list(), TimeoutError);
  assert.equal(l.ext.length, 1); // the probe, once
  assert.equal(l.requests.length, 4); // its seed LIST, then LIST three times
  assert.equal(new Set(l.requests.slice(1).map((r) => r.toString('hex'))).size, 1);
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
  const l = await lobby(t, (i, req) => [typeOf(req) === 0x40 ? emptyList(req) : reply(req, 0x43, roomPort(5, 30005))]);
  const c = await Client.connect(l.addr, { framing: 'legacy', timeout: 500 });
  t.after(() => c.close());
  assert.equal((await c.create({ name: 'ignored by a seed lobby' })).room, 5);
  assert.deepEqual(l.requests.map((r) => decode(r).type), ['LIST_ROOMS', 'LIST_ROOMS', 'CREATE_ROOM']);
  assert.ok([...l.requests, ...l.ext].every((r) => r[0] === 0xa3));
});

test('a seed lobby says not supported for what needs the extension', async (t) => {
  const l = await lobby(t, (i, req) => [emptyList(req)]);
  const c = await Client.connect(l.addr, { timeout: 500 });
  t.after(() => c.close());
  await assert.rejects(c.join('abcdef'), NotSupportedError);
  await assert.rejects(c.join(1, { password: 'pw' }), NotSupportedError);
  await assert.rejects(c.create({ private: true }), NotSupportedError);
  await assert.rejects(c.list({ mode: 'ctf' }), NotSupportedError);
  await assert.rejects(c.quickJoin({ map: 'dust' }), NotSupportedError);
  assert.equal(l.ext.length, 1); // asked once, for the client's life
});

test('the retry token is echoed and the seat carries its token', async (t) => {
  const joins = [];
  const l = await lobby(t, (i, req) => {
    if (typeOf(req) < 0x80) return [emptyList(req)];
    if (!extToken(req).length) {
      assert.equal(req.length, PAD_TO); // padded until it has a token
      return [reply(req, 0x87, Buffer.from('\x01\x04tokn', 'latin1'))];
    }
    assert.equal(extToken(req).toString(), 'tokn');
    if (typeOf(req) === 0x84) {
      joins.push(req);
      return joins.length === 1 ? [] : [seatReply(req, 7, [192, 0, 2, 7])];
    }
    return [reply(req, 0x85, Buffer.from([1, 4]))];
  }, true);
  const c = await Client.connect(l.addr, { timeout: 300 });
  t.after(() => c.close());
  const seat = await c.join('abcdef');
  await assert.rejects(c.create({ name: 'x', password: 'pw' }), (e) => e instanceof RefusedError && e.reason === 'wrong_password');
  assert.deepEqual([seat.room, seat.address, seat.port, seat.code], [7, '192.0.2.7', 30000, 'ABCDEF']);
  assert.deepEqual([Buffer.from(seat.token), seat.expires.getTime()], [SEAT_TOKEN, 1700000000000]);
  assert.equal(joins.length, 2);
  assert.deepEqual(joins[0], joins[1]); // a retry reuses the sequence id
  assert.deepEqual(l.requests.map(typeOf), [0x40, 0x80, 0x84, 0x84, 0x82]);
});

test('concurrent quick joins each get their own seat', async (t) => {
  const l = await lobby(t, (i, req) => {
    if (typeOf(req) === 0x80) return [reply(req, 0x81, Buffer.from([1, 0, 0, 0, 0, 0]))];
    if (typeOf(req) === 0x40) return [];
    return [seatReply(req, seqOf(req))];
  }, true);
  const c = await Client.connect(l.addr, { timeout: 500 });
  t.after(() => c.close());
  const seats = await Promise.all([1, 2, 3].map(() => c.quickJoin({ mode: 'ctf', tags: { region: 'eu' } })));
  assert.equal(new Set(seats.map((s) => s.room)).size, 3);
  assert.equal(l.requests.filter((r) => typeOf(r) === 0x80).length, 1); // one probe for all three
  assert.ok(l.requests.filter((r) => typeOf(r) === 0x86).every((r) => r.length === PAD_TO));
});
