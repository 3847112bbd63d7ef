// The TypeScript side of the write-path comparison (tests/benches/write_path.rs runs it).
//
//   node addkeys.mjs <config.json> <items.jsonl> <keyed-out.jsonl> <rounds> [entity]
//
// Loads @karmaniverous/entity-manager from NODE_PATH (tests/ts-bench/install.sh puts it in a
// cache outside the repository), adds keys to every item `rounds` times, and prints one JSON
// line: nanoseconds per item of each round. The keyed items of the first round are written to
// <keyed-out.jsonl> so that the Rust side can check both libraries wrote the same keys.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// ES modules ignore NODE_PATH: resolve the package's ESM entry point from it by hand.
const modules = process.env.NODE_PATH;
if (!modules) throw new Error('set NODE_PATH to the node_modules holding @karmaniverous/entity-manager');
const entry = join(modules, '@karmaniverous/entity-manager/dist/mjs/index.js');
const { EntityManager } = await import(pathToFileURL(entry).href);

const [config, itemsPath, outPath, roundsArg, entityArg] = process.argv.slice(2);
const entity = entityArg ?? 'user';
// a silent logger: the default one (console) prints every call
const manager = new EntityManager(JSON.parse(readFileSync(config, 'utf8')), { debug() {}, error() {} });
const items = readFileSync(itemsPath, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const rounds = Number(roundsArg ?? 15);

// warm-up: let the JIT settle
for (let w = 0; w < (rounds > 0 ? 3 : 0); w++) for (const item of items) manager.addKeys(entity, item);

writeFileSync(outPath, items.map((item) => JSON.stringify(manager.addKeys(entity, item))).join('\n') + '\n');

const perItem = [];
let sink = 0;
for (let r = 0; r < rounds; r++) {
  const start = process.hrtime.bigint();
  for (const item of items) sink += manager.addKeys(entity, item).hashKey.length;
  const elapsed = Number(process.hrtime.bigint() - start);
  perItem.push(elapsed / items.length);
}
console.log(JSON.stringify({ nsPerItem: perItem, sink }));
