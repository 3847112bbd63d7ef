// The TypeScript side of the side-by-side query bench (tests/benches/query_ts.rs runs it).
//
//   node query.mjs <spec.json> <out.json>
//
// spec: { "items": "<items.jsonl>", "entity": "user", "runs": [{ "name", "config": "<config.json>",
//         "index", "limit", "pageSize", "throttle", "maxPages", "delayMs", "clock",
//         "timestampFrom", "timestampTo", "untilCovered", "repeats", "cpuPages" }] }
//
// Loads @karmaniverous/entity-manager (6.14.0) from NODE_PATH (tests/ts-bench/install.sh). For
// each run: keys every item with `addKeys` under the run's config, keeps each hash key's items
// in an array sorted as the index sorts them (range key, then the table's range key, as a
// DynamoDB GSI and our MemoryStore do), and pages `entityManager.query` to its end or
// `maxPages`, with a `shardQueryMap` whose function answers from those arrays after waiting
// `delayMs` (a precise timer thread, below; the real mean wait is measured). The shard
// function follows DynamoDB's `Limit`: a `pageKey` (LastEvaluatedKey) whenever it returned
// `pageSize` items, none otherwise.
//
// Writes <out.json>: per run, the hash key of every item (so the Rust side checks both libraries
// placed the items alike), the hash keys the query spans, the mean real wait, and per page the
// wall time, the CPU time of the process, shard queries, items read, items returned, the page
// key's length and the unique ids returned, in order, and the wall time of each pass. The Rust
// side checks those ids against its own brute-force oracle.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleepTimeout } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

// ES modules ignore NODE_PATH: resolve the package's ESM entry point from it by hand.
const modules = process.env.NODE_PATH;
if (!modules) throw new Error('set NODE_PATH to the node_modules tests/ts-bench/install.sh prints');
const load = (path) =>
  import(pathToFileURL(join(modules, '@karmaniverous/entity-manager/dist/mjs', path)).href);
const { EntityManager } = await load('index.js');
// not exported by the package's index: the hash keys a query spans
const { getHashKeySpace } = await load('EntityManager/getHashKeySpace.js');
// what `query` returns as `pageKeyMap` once every shard is exhausted: lz-string of `[]`
const EXHAUSTED = 'NoXSA';

// A precise timer, as the Rust side's (a thread that wakes each wait within tens of microseconds
// of its deadline): a worker thread sleeps in `Atomics.wait` (sub-millisecond timeouts) until the
// earliest deadline and posts the ids that are due. `setTimeout` counts whole milliseconds and
// runs late when the machine is busy (5.3 ms on average for 5 ms at load 4, 8.5 ms at load 9):
// `"clock": "timeout"` in a run uses it instead. Requests go through shared memory (slot i: the
// delay of wait i, stamped by the worker on arrival), so that the worker needs no event loop
// while it waits.
const SLOTS = 4096;
const shared = new SharedArrayBuffer(8 + SLOTS * 8);
const control = new Int32Array(shared, 0, 2); // [requests written, wake counter]
const delays = new Float64Array(shared, 8, SLOTS);
const timer = new Worker(
  `const { workerData, parentPort } = require('node:worker_threads');
   const control = new Int32Array(workerData, 0, 2);
   const delays = new Float64Array(workerData, 8, ${SLOTS});
   let read = 0;
   const due = []; // [deadline, id], unsorted: few in flight
   for (;;) {
     const written = Atomics.load(control, 0);
     const now = performance.now();
     while (read < written) {
       due.push([now + delays[read % ${SLOTS}], read]);
       read += 1;
     }
     const ready = [];
     let next = Infinity;
     for (let i = due.length - 1; i >= 0; i--) {
       if (due[i][0] <= now) { ready.push(due[i][1]); due.splice(i, 1); }
       else next = Math.min(next, due[i][0]);
     }
     if (ready.length) parentPort.postMessage(ready);
     if (Atomics.load(control, 0) !== read) continue;
     const wake = Atomics.load(control, 1);
     if (Atomics.load(control, 0) !== read) continue;
     Atomics.wait(control, 1, wake, next === Infinity ? undefined : next - performance.now());
   }`,
  { eval: true, workerData: shared },
);
const pending = new Map();
timer.on('message', (ids) => {
  for (const id of ids) {
    pending.get(id)?.();
    pending.delete(id);
  }
});
let requests = 0;
const sleepPrecise = (ms) =>
  new Promise((resolve) => {
    const id = requests;
    requests += 1;
    if (pending.size >= SLOTS) throw new Error('too many waits in flight');
    pending.set(id, resolve);
    delays[id % SLOTS] = ms;
    Atomics.store(control, 0, requests);
    Atomics.add(control, 1, 1);
    Atomics.notify(control, 1);
  });

const [specPath, outPath] = process.argv.slice(2);
if (!specPath || !outPath) throw new Error('usage: node query.mjs <spec.json> <out.json>');
const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const entityToken = spec.entity ?? 'user';
const items = readFileSync(spec.items, 'utf8')
  .split('\n')
  .filter((line) => line.trim())
  .map((line) => JSON.parse(line));
const silent = { debug() {}, error() {} };
const now = () => process.hrtime.bigint();
const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function run(r) {
  const config = JSON.parse(readFileSync(r.config, 'utf8'));
  const manager = new EntityManager(config, silent);
  const { hashKey, rangeKey } = manager.config;
  const { uniqueProperty } = manager.config.entities[entityToken];
  const indexRangeKey = manager.config.indexes[r.index].rangeKey;
  if (manager.config.indexes[r.index].hashKey !== hashKey)
    throw new Error(`index ${r.index}: only indexes on the table hash key are supported here`);

  // the shards, each in index order
  const keyed = items.map((item) => manager.addKeys(entityToken, item));
  const cmp = (a, b) => {
    const x = a[indexRangeKey];
    const y = b[indexRangeKey];
    if (x !== y) return x < y ? -1 : 1;
    return a[rangeKey] < b[rangeKey] ? -1 : a[rangeKey] > b[rangeKey] ? 1 : 0;
  };
  const shards = new Map();
  for (const item of keyed) {
    const shard = shards.get(item[hashKey]);
    if (shard) shard.push(item);
    else shards.set(item[hashKey], [item]);
  }
  for (const shard of shards.values()) shard.sort(cmp);
  // the first position after a page key
  const after = (shard, pageKey) => {
    let lo = 0;
    let hi = shard.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cmp(shard[mid], pageKey) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  let shardQueries = 0;
  let itemsRead = 0;
  let waited = 0;
  let waits = 0;
  const shardQuery = async (hashKeyValue, pageKey, pageSize) => {
    shardQueries += 1;
    if (r.delayMs > 0) {
      const started = now();
      await (r.clock === 'timeout' ? sleepTimeout(r.delayMs) : sleepPrecise(r.delayMs));
      waited += Number(now() - started);
      waits += 1;
    }
    const shard = shards.get(hashKeyValue) ?? [];
    const start = pageKey ? after(shard, pageKey) : 0;
    const page = shard.slice(start, start + pageSize);
    itemsRead += page.length;
    const last = page[page.length - 1];
    return {
      count: page.length,
      items: page,
      pageKey:
        page.length === pageSize
          ? { [hashKey]: last[hashKey], [rangeKey]: last[rangeKey], [indexRangeKey]: last[indexRangeKey] }
          : undefined,
    };
  };
  const options = {
    entityToken,
    item: {},
    shardQueryMap: { [r.index]: shardQuery },
    limit: r.limit,
    pageSize: r.pageSize,
    throttle: r.throttle,
    timestampFrom: r.timestampFrom,
    timestampTo: r.timestampTo,
    sortOrder: [{ property: indexRangeKey }, { property: uniqueProperty }],
  };
  const lanes = getHashKeySpace(manager, entityToken, hashKey, {}, r.timestampFrom, r.timestampTo).length;

  // warm-up: one page, not recorded
  await manager.query(options);
  shardQueries = 0;
  itemsRead = 0;
  waited = 0;
  waits = 0;

  // Pages the query to its end or `maxPages`; with `untilCovered`, also stops once every item
  // has been returned.
  const pass = async () => {
    const pages = [];
    const returned = new Set();
    let pageKeyMap;
    let complete = false;
    for (let p = 0; p < r.maxPages; p++) {
      const [q0, i0, c0, t0] = [shardQueries, itemsRead, cpuUs(), now()];
      const result = await manager.query({ ...options, pageKeyMap });
      const wallNs = Number(now() - t0);
      const ids = result.items.map((item) => String(item[uniqueProperty]));
      pages.push({
        wallNs,
        cpuUs: cpuUs() - c0,
        shardQueries: shardQueries - q0,
        itemsRead: itemsRead - i0,
        itemsReturned: result.items.length,
        tokenLen: result.pageKeyMap.length,
        ids,
      });
      if (result.pageKeyMap === EXHAUSTED) {
        complete = true;
        break;
      }
      pageKeyMap = result.pageKeyMap;
      if (r.untilCovered) {
        for (const id of ids) returned.add(id);
        if (returned.size === items.length) break;
      }
    }
    return { pages, complete };
  };
  // `repeats` passes (default 1); the wall time of the first `cpuPages` pages of each (the CPU
  // of a pass without latency: the least disturbed is the one to read), the pages of the last
  let last;
  const passNs = [];
  for (let n = 0; n < (r.repeats ?? 1); n++) {
    last = await pass();
    passNs.push(last.pages.slice(0, r.cpuPages ?? r.maxPages).reduce((sum, p) => sum + p.wallNs, 0));
  }
  return {
    name: r.name,
    lanes,
    populated: shards.size,
    hashKeys: Object.fromEntries(keyed.map((item) => [String(item[uniqueProperty]), item[hashKey]])),
    meanWaitNs: waits ? waited / waits : 0,
    complete: last.complete,
    pages: last.pages,
    passNs,
  };
}

const out = [];
for (const r of spec.runs) out.push(await run(r));
writeFileSync(outPath, JSON.stringify({ node: process.version, runs: out }));
await timer.terminate();
