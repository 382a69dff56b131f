import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/engines';
import { ManualClock } from '../../lib/clock';
import { openDatabase, type DatabaseHandle } from '../db/database';
import { migrateToLatest } from '../db/migrate';
import { normaliseInPlace } from '../embeddings';
import { createVectorIndex, type VectorIndex } from '.';

/** The same contract on every implementation: resident codes and exact on SQLite, pgvector (PGlite), exact on PostgreSQL. */
const clock = new ManualClock();
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function open(engine: 'sqlite' | 'postgres', serverUrl?: string): Promise<DatabaseHandle> {
  const saved = { e: process.env.SVC_TEST_ENGINE, pg: process.env.SVC_TEST_PG };
  process.env.SVC_TEST_ENGINE = engine;
  if (serverUrl) process.env.SVC_TEST_PG = serverUrl;
  else delete process.env.SVC_TEST_PG;
  let tdb: TestDatabase;
  try {
    tdb = await createTestDatabase();
  } finally {
    process.env.SVC_TEST_ENGINE = saved.e;
    if (saved.pg === undefined) delete process.env.SVC_TEST_PG;
    else process.env.SVC_TEST_PG = saved.pg;
  }
  const h = openDatabase({ databaseUrl: tdb.env.DATABASE_URL, dataDir: tdb.dataDir, poolMax: 1 });
  cleanups.push(async () => { await h.close(); await tdb.close(); });
  await migrateToLatest(h.db);
  return h;
}

/** Deterministic pseudo-random unit vectors. */
function vec(seed: number, dims = 16): Float32Array {
  const v = new Float32Array(dims);
  let x = seed * 2654435761 % 2 ** 32;
  for (let i = 0; i < dims; i++) {
    x = (x * 1664525 + 1013904223) % 2 ** 32;
    v[i] = x / 2 ** 32 - 0.5;
  }
  return normaliseInPlace(v);
}
const rec = (owner: string, item: string, seed: number, model = 'm1', version = 1) =>
  ({ collection: 'c', ownerId: owner, itemId: item, itemVersion: version, modelId: model, vector: vec(seed) });

const PG_SERVER = process.env.SVC_TEST_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const cases: [string, () => Promise<VectorIndex>, string][] = [
  ['resident codes on SQLite', async () => createVectorIndex(await open('sqlite'), clock), 'resident'],
  ['exact scan on SQLite', async () => createVectorIndex(await open('sqlite'), clock, { mode: 'exact' }), 'exact'],
  ['pgvector on PGlite', async () => createVectorIndex(await open('postgres'), clock), 'pgvector'],
];
if (process.env.SVC_TEST_PG_SERVER !== 'off') {
  cases.push(['exact scan on the PostgreSQL server (no pgvector)', async () => createVectorIndex(await open('postgres', PG_SERVER), clock), 'exact']);
}

describe.each(cases)('%s', (_name, make, kind) => {
  let index: VectorIndex;
  // A hook, with room: creating and migrating a database (a PGlite one above all: PostgreSQL in
  // WebAssembly) is CPU work that takes long while other test files run beside this one.
  beforeAll(async () => {
    index = await make();
  }, 180_000);
  test('is the expected kind', () => {
    expect(index.kind).toBe(kind);
  });

  test('nearest neighbours match an exact ranking, scoped by owner and model', async () => {
    const items = Array.from({ length: 60 }, (_, i) => rec('alice', `a${i}`, i + 1));
    expect(await index.upsert(items)).toBe(60);
    await index.upsert([rec('bob', 'b0', 1), rec('alice', 'other-model', 1, 'm2')]);
    const q = vec(1);
    const expected = items
      .map((it) => ({ itemId: it.itemId, cosine: it.vector.reduce((s, x, i) => s + x * q[i], 0) }))
      .sort((x, y) => y.cosine - x.cosine).slice(0, 5);
    const hits = await index.query({ collection: 'c', ownerId: 'alice', modelId: 'm1', vector: q, limit: 5 });
    expect(hits.map((h) => h.itemId)).toEqual(expected.map((e) => e.itemId));
    expect(hits[0].itemId).toBe('a0');
    expect(hits[0].cosine).toBeCloseTo(1, 4);
    for (let i = 0; i < 5; i++) expect(hits[i].cosine).toBeCloseTo(expected[i].cosine, 4);
    expect((await index.query({ collection: 'c', ownerId: 'bob', modelId: 'm1', vector: q, limit: 5 })).map((h) => h.itemId)).toEqual(['b0']);
    expect((await index.query({ collection: 'c', ownerId: 'alice', modelId: 'm2', vector: q, limit: 5 })).map((h) => h.itemId)).toEqual(['other-model']);
    expect(await index.query({ collection: 'other', ownerId: 'alice', modelId: 'm1', vector: q, limit: 5 })).toEqual([]);
  });

  test('a newer version replaces; an older one never overwrites a newer one; a new model always replaces', async () => {
    await index.upsert([rec('carol', 'x', 100, 'm1', 5)]);
    expect(await index.upsert([rec('carol', 'x', 200, 'm1', 4)])).toBe(0);
    let [hit] = await index.query({ collection: 'c', ownerId: 'carol', modelId: 'm1', vector: vec(100), limit: 1 });
    expect(hit.cosine).toBeCloseTo(1, 4);
    expect(await index.upsert([rec('carol', 'x', 300, 'm1', 6)])).toBe(1);
    [hit] = await index.query({ collection: 'c', ownerId: 'carol', modelId: 'm1', vector: vec(300), limit: 1 });
    expect(hit.cosine).toBeCloseTo(1, 4);
    expect(await index.countStale('c', 'm9')).toBeGreaterThan(0);
    expect(await index.upsert([rec('carol', 'x', 400, 'm9', 1)])).toBe(1);
    expect(await index.query({ collection: 'c', ownerId: 'carol', modelId: 'm1', vector: vec(300), limit: 1 })).toEqual([]);
    expect((await index.query({ collection: 'c', ownerId: 'carol', modelId: 'm9', vector: vec(400), limit: 1 }))[0].itemId).toBe('x');
  });

  test('remove drops vectors from search', async () => {
    await index.remove('c', 'alice', ['a0', 'a1']);
    const hits = await index.query({ collection: 'c', ownerId: 'alice', modelId: 'm1', vector: vec(1), limit: 100 });
    expect(hits.map((h) => h.itemId)).not.toContain('a0');
    expect(hits).toHaveLength(58);
  });
});

