// The TypeScript side of the live mixed-fleet test (tests/tests/fleet.rs), on DynamoDB Local.
//
//   node fleet.mjs write <endpoint> <table> <config.json> <entity> <records.jsonl>
//   node fleet.mjs read  <endpoint> <table> <config.json> <entity> <records.jsonl> [options.json]
//   node fleet.mjs update <endpoint> <table> <config.json> <entity> <records.jsonl>
//
// `write` adds keys to every record with the TS EntityManager (@karmaniverous/entity-manager
// 6.14.0) and puts them with the TS EntityClient (@karmaniverous/entity-client-dynamodb 0.2.10):
// `entityManager.addKeys` + `entityClient.putItems`.
//
// `update` is a TypeScript service changing records another service wrote: it looks each one up
// by its primary key (`getPrimaryKey` + `getItems`), then writes the record given (the same unique
// and timestamp values, other properties changed) with its keys rebuilt (`addKeys` with
// `overwrite`) and `putItems`. Prints how many it found and wrote.
//
// `read` looks every record up by its primary key (`entityManager.getPrimaryKey` of its unique
// and timestamp properties + `entityClient.getItems`), then pages every index of the config to
// its end with the TS cross-shard query (`QueryBuilder.query`, i.e. `entityManager.query` over
// the client's shard query functions). An index whose hash key is a sharded generated property
// is queried once per distinct value of its components among the records. Options:
// `{"pageSize": n, "limit": n, "maxPages": n}` (defaults: the config's, and 2000 pages).
//
// Prints one JSON line: the unique ids found by key and those items (keys included), and per index the unique ids found, the
// pages and items returned (duplicates included) and the errors thrown.
//
// Records are JSON lines; a property whose transcode is `bigint`/`bigint20` is given as a string
// (JSON numbers cannot hold it) and written as a BigInt.
//
// Only ever talks to the endpoint given (which must be loopback), with an explicit region and
// static dummy credentials: never the default credential chain.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// ES modules ignore NODE_PATH: resolve the packages' ESM entry points from it by hand.
const modules = process.env.NODE_PATH;
if (!modules) throw new Error('set NODE_PATH to the node_modules tests/ts-bench/install.sh prints');
const load = (path) => import(pathToFileURL(join(modules, path)).href);
const { EntityManager } = await load('@karmaniverous/entity-manager/dist/mjs/index.js');
const { EntityClient, QueryBuilder } = await load(
  '@karmaniverous/entity-client-dynamodb/dist/mjs/index.js',
);
const require = createRequire(join(modules, '..', 'package.json'));
const { compressToEncodedURIComponent } = require('lz-string');
// what `entityManager.query` returns as `pageKeyMap` once every shard is exhausted
const EXHAUSTED = compressToEncodedURIComponent(JSON.stringify([]));

const [command, endpoint, tableName, configPath, entityToken, recordsPath, optionsPath] =
  process.argv.slice(2);
if (!/^http:\/\/(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?\/?$/.test(endpoint ?? ''))
  throw new Error(`endpoint ${endpoint} is not a loopback address`);

const config = JSON.parse(readFileSync(configPath, 'utf8'));
const options = optionsPath ? JSON.parse(readFileSync(optionsPath, 'utf8')) : {};
const silent = { debug() {}, error() {} };
const entityManager = new EntityManager(config, silent);
const entityClient = new EntityClient({
  entityManager,
  logger: silent,
  batchProcessOptions: { logger: silent },
  tableName,
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  maxAttempts: 3,
});

const bigints = Object.entries(config.propertyTranscodes ?? {})
  .filter(([, transcode]) => transcode === 'bigint' || transcode === 'bigint20')
  .map(([property]) => property);
const records = readFileSync(recordsPath, 'utf8')
  .split('\n')
  .filter((line) => line.trim())
  .map((line) => {
    const record = JSON.parse(line);
    for (const property of bigints)
      if (typeof record[property] === 'string') record[property] = BigInt(record[property]);
    return record;
  });
const { uniqueProperty, timestampProperty } = config.entities[entityToken];
// The primary key of every record, from its unique and timestamp values.
const primaryKeys = () =>
  records.map((record) =>
    entityManager.getPrimaryKey(entityToken, {
      [uniqueProperty]: record[uniqueProperty],
      [timestampProperty]: record[timestampProperty],
    }),
  );

if (command === 'write') {
  const items = records.map((record) => entityManager.addKeys(entityToken, record));
  await entityClient.putItems(items);
  console.log(JSON.stringify({ written: items.length }));
} else if (command === 'update') {
  const keys = primaryKeys();
  const { items: found } = await entityClient.getItems(keys);
  const items = records.map((record) => entityManager.addKeys(entityToken, record, true));
  await entityClient.putItems(items);
  console.log(JSON.stringify({ found: found.length, written: items.length }));
} else if (command === 'read') {
  // By key: what a TypeScript service does to read one record it knows.
  const keys = primaryKeys();
  const { items: got } = await entityClient.getItems(keys);
  const byKey = [...new Set(got.map((item) => String(item[uniqueProperty])))].sort();
  const byKeyItems = Object.fromEntries(got.map((item) => [String(item[uniqueProperty]), item]));

  // By paging: every index to its end.
  const indexes = {};
  for (const [indexToken, { hashKey: hashKeyToken, rangeKey }] of Object.entries(config.indexes)) {
    const components = config.generatedProperties?.sharded?.[hashKeyToken];
    // the partial items that fill a sharded generated hash key: one per distinct combination
    const queryItems = components
      ? [
          ...new Map(
            records
              .filter((r) => components.every((c) => r[c] !== undefined && r[c] !== null))
              .map((r) => {
                const item = Object.fromEntries(components.map((c) => [c, r[c]]));
                return [JSON.stringify(item, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)), item];
              }),
          ).values(),
        ]
      : [{}];
    const ids = new Set();
    const errors = [];
    let pages = 0;
    let items = 0;
    let unterminated = 0;
    for (const item of queryItems) {
      let pageKeyMap;
      let done = false;
      for (let page = 0; page < (options.maxPages ?? 2000); page++) {
        const builder = new QueryBuilder({
          entityClient,
          entityToken,
          hashKeyToken,
          pageKeyMap,
          tableName,
        });
        // registers the index with no range key condition
        builder.addRangeKeyCondition(indexToken, { property: rangeKey, operator: 'begins_with' });
        let result;
        try {
          result = await builder.query({
            item,
            ...(options.limit ? { limit: options.limit } : {}),
            ...(options.pageSize ? { pageSize: options.pageSize } : {}),
          });
        } catch (error) {
          const inner = error?.errors?.map((e) => e?.message ?? String(e)).join('; ');
          errors.push(`${JSON.stringify(item)} page ${page}: ${error?.message ?? error}${inner ? ` (${inner})` : ''}`);
          done = true;
          break;
        }
        pages += 1;
        items += result.items.length;
        for (const found of result.items) ids.add(String(found[uniqueProperty]));
        if (result.pageKeyMap === EXHAUSTED) {
          done = true;
          break;
        }
        pageKeyMap = result.pageKeyMap;
      }
      if (!done) unterminated += 1;
    }
    indexes[indexToken] = {
      queries: queryItems.length,
      pages,
      items,
      ids: [...ids].sort(),
      errors,
      unterminated,
    };
  }
  // bigint values as their decimal strings
  const json = (v) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? x.toString() : x));
  console.log(json({ byKey, byKeyItems, indexes }));
} else {
  throw new Error(`unknown command ${command}: write, update or read`);
}
