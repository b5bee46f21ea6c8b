// node bench.js HOST:PORT N prints the mean round trip of N LISTs and
// of N JOINs (the extension's, answered EXT_REFUSED) against a real lobby.
import { Client, RefusedError } from './index.js';

const [lobby, count] = process.argv.slice(2);
const n = Number(count);
const c = await Client.connect(lobby);
await c.list();
const t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) await c.list();
const t1 = process.hrtime.bigint();
for (let i = 0; i < n; i++) {
  try {
    await c.join(0xfffffff0);
  } catch (e) {
    if (!(e instanceof RefusedError)) throw e;
  }
}
const t2 = process.hrtime.bigint();
c.close();
console.log(`list_ns=${(t1 - t0) / BigInt(n)} join_ns=${(t2 - t1) / BigInt(n)}`);
