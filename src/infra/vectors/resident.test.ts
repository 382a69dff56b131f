/**
 * The resident codes (SQLite) stay in step with vector_items: vectors stored before the codes were
 * built, writes and replacements after, removals, a transaction rolled back, eviction under a small
 * budget, a partition too large for the budget (exact scan), growth past the size its mean was taken
 * at. Every answer is compared with an exact ranking of what is stored.
 */
import { afterAll, expect, test } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/engines';
import { ManualClock } from '../../lib/clock';
import { openDatabase, type DatabaseHandle } from '../db/database';
import { migrateToLatest, migrateUpTo } from '../db/migrate';
import { normaliseInPlace } from '../embeddings';
import { createVectorIndex, type VectorIndex } from '.';
import { topK } from './items';

const clock = new ManualClock();
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A SQLite database migrated to the latest schema, or up to the migration `upTo`. */
async function open(upTo?: string): Promise<DatabaseHandle> {
  const saved = process.env.SVC_TEST_ENGINE;
  process.env.SVC_TEST_ENGINE = 'sqlite';
  const tdb = await createTestDatabase();
  process.env.SVC_TEST_ENGINE = saved;
  const h = openDatabase({ databaseUrl: tdb.env.DATABASE_URL, dataDir: tdb.dataDir, poolMax: 1 });
  cleanups.push(async () => { await h.close(); await tdb.close(); });
  await (upTo ? migrateUpTo(h.db, upTo) : migrateToLatest(h.db));
  return h;
}

/** Deterministic unit vectors near one mean direction, as a text model's are. */
function vec(seed: number, dims = 32): Float32Array {
  const v = new Float32Array(dims);
  let x = (seed * 2654435761) % 2 ** 32;
  for (let i = 0; i < dims; i++) {
    x = (x * 1664525 + 1013904223) % 2 ** 32;
    v[i] = (i < 4 ? 1 : 0) + (x / 2 ** 32 - 0.5);
  }
  return normaliseInPlace(v);
}
const rec = (owner: string, item: string, seed: number, version = 1) =>
  ({ collection: 'c', ownerId: owner, itemId: item, itemVersion: version, modelId: 'm', vector: vec(seed) });

/** The index's answer against an exact ranking of `stored`. */
async function agrees(index: VectorIndex, owner: string, stored: Map<string, Float32Array>, seed: number, limit = 10) {
  const q = vec(seed);
  const exact = topK(q, [...stored].map(([itemId, vector]) => ({ itemId, vector })), limit);
  const got = await index.query({ collection: 'c', ownerId: owner, modelId: 'm', vector: q, limit });
  expect(got.map((h) => h.itemId)).toEqual(exact.map((h) => h.itemId));
  got.forEach((h, i) => expect(h.cosine).toBeCloseTo(exact[i]!.cosine, 5));
}

/** A resident index on a fresh database holding `n` vectors of `owner`, and what is stored. */
async function filled(owner: string, n: number) {
  const h = await open();
  const index = await createVectorIndex(h, clock);
  const all = Array.from({ length: n }, (_, i) => rec(owner, `${owner}${i}`, i + 1));
  await index.upsert(all);
  return { h, index, stored: new Map(all.map((r) => [r.itemId, r.vector])) };
}

test('codes are built from what is stored, then follow writes, replacements and removals', async () => {
  const h = await open();
  const stored = new Map<string, Float32Array>();
  const exact = await createVectorIndex(h, clock, { mode: 'exact' });
  const before = Array.from({ length: 600 }, (_, i) => rec('ann', `a${i}`, i + 1));
  await exact.upsert(before);
  for (const r of before) stored.set(r.itemId, r.vector);

  const index = await createVectorIndex(h, clock);
  expect(index.kind).toBe('resident');
  await agrees(index, 'ann', stored, 3); // built on this first query from vector_items
  await agrees(index, 'ann', stored, 77);

  const later = Array.from({ length: 300 }, (_, i) => rec('ann', `b${i}`, 5000 + i));
  await index.upsert(later);
  for (const r of later) stored.set(r.itemId, r.vector);
  const replaced = rec('ann', 'a10', 9999, 2);
  await index.upsert([replaced]);
  stored.set('a10', replaced.vector);
  await agrees(index, 'ann', stored, 9999, 5);
  expect((await index.query({ collection: 'c', ownerId: 'ann', modelId: 'm', vector: vec(9999), limit: 1 }))[0]).toMatchObject({ itemId: 'a10' });

  const gone = ['a1', 'a2', 'b3', 'a10'];
  await index.remove('c', 'ann', gone);
  for (const g of gone) stored.delete(g);
  await agrees(index, 'ann', stored, 1);
  await agrees(index, 'ann', stored, 9999);
  // Removing more than a fifth rebuilds the partition's codes on its next query.
  const many = [...stored.keys()].slice(0, 300);
  await index.remove('c', 'ann', many);
  for (const g of many) stored.delete(g);
  await agrees(index, 'ann', stored, 42, 50);
  expect(await index.query({ collection: 'c', ownerId: 'bob', modelId: 'm', vector: vec(1), limit: 5 })).toEqual([]);
});

test('removing the nearest vectors (fewer than a fifth: no rebuild) still answers the full limit from the rest', async () => {
  const { index, stored } = await filled('dee', 1000);
  await agrees(index, 'dee', stored, 123, 10); // codes built
  // The 150 nearest to the query go: their codes stay (a drop is only counted) until a rebuild.
  const q = vec(123);
  const nearest = topK(q, [...stored].map(([itemId, vector]) => ({ itemId, vector })), 150).map((x) => x.itemId);
  await index.remove('c', 'dee', nearest);
  for (const g of nearest) stored.delete(g);
  await agrees(index, 'dee', stored, 123, 10);
  const hits = await index.query({ collection: 'c', ownerId: 'dee', modelId: 'm', vector: q, limit: 60 });
  expect(hits).toHaveLength(60);
  expect(hits.filter((x) => !stored.has(x.itemId))).toEqual([]);
});

test('a vector written in a transaction that rolls back is never answered', async () => {
  const { h, index, stored } = await filled('cy', 500);
  await agrees(index, 'cy', stored, 5); // codes built
  const ghost = rec('cy', 'ghost', 31337);
  await expect(h.db.transaction().execute(async (trx) => {
    await index.upsert([ghost], trx);
    throw new Error('rolled back');
  })).rejects.toThrow('rolled back');
  const hits = await index.query({ collection: 'c', ownerId: 'cy', modelId: 'm', vector: ghost.vector, limit: 5 });
  expect(hits.map((x) => x.itemId)).not.toContain('ghost');
  await agrees(index, 'cy', stored, 31337, 5);
});

test('a small budget evicts and rebuilds partitions; one larger than the budget is scanned exactly', async () => {
  const h = await open();
  // 600 vectors of 32 dimensions take about 600 × (4 + 8 + 4 + 40) bytes: 40 KB holds one partition, not two.
  const index = await createVectorIndex(h, clock, { residentBytes: 40_000 });
  const owners = { dee: new Map<string, Float32Array>(), eve: new Map<string, Float32Array>() };
  for (const [owner, stored] of Object.entries(owners)) {
    const rs = Array.from({ length: 600 }, (_, i) => rec(owner, `${owner}${i}`, (owner === 'dee' ? 0 : 10_000) + i));
    await index.upsert(rs);
    for (const r of rs) stored.set(r.itemId, r.vector);
  }
  for (let round = 0; round < 3; round++) {
    await agrees(index, 'dee', owners.dee, 11 + round);
    await agrees(index, 'eve', owners.eve, 10_011 + round);
  }
  const tiny = await createVectorIndex(h, clock, { residentBytes: 1_000 });
  await agrees(tiny, 'dee', owners.dee, 12);
  await agrees(tiny, 'dee', owners.dee, 13, 700);
});

test('a partition that grows well past the size its mean was taken at is rebuilt and stays exact', async () => {
  const h = await open();
  const index = await createVectorIndex(h, clock);
  const stored = new Map<string, Float32Array>();
  for (let round = 0; round < 6; round++) {
    const rs = Array.from({ length: 50 * 2 ** round }, (_, i) => rec('fay', `f${round}.${i}`, round * 100_000 + i));
    await index.upsert(rs);
    for (const r of rs) stored.set(r.itemId, r.vector);
    await agrees(index, 'fay', stored, round * 100_000 + 7);
  }
});

test('migration 0106 drops the sqlite-vec mirrors of a database that has them', async () => {
  const h = await open('0105_lexical_index');
  h.sqlite!.exec('create virtual table vec_bits_512 using vec0(part text partition key, embedding bit[512])');
  h.sqlite!.prepare('insert into vec_bits_512(rowid, part, embedding) values (1, ?, vec_quantize_binary(vec_f32(?)))').run('p', Buffer.from(new Float32Array(512).fill(0.5).buffer));
  const tables = () => (h.sqlite!.prepare("select name from sqlite_master where name like 'vec_bits_512%'").all() as { name: string }[]).map((r) => r.name);
  expect(tables()).toContain('vec_bits_512');
  await migrateToLatest(h.db);
  expect(tables()).toEqual([]);
});

test('queries and writes made while a large partition is being built (a page at a time) all see the same codes', async () => {
  const h = await open();
  const exact = await createVectorIndex(h, clock, { mode: 'exact' });
  const stored = new Map<string, Float32Array>();
  for (let i = 0; i < 9000; i += 1000) {
    const rs = Array.from({ length: 1000 }, (_, j) => rec('gus', `g${i + j}`, 7 + i + j));
    await exact.upsert(rs);
    for (const r of rs) stored.set(r.itemId, r.vector);
  }
  const index = await createVectorIndex(h, clock);
  const q = (seed: number) => index.query({ collection: 'c', ownerId: 'gus', modelId: 'm', vector: vec(seed), limit: 3 });
  const fresh = rec('gus', 'fresh', 424_242);
  const [first, second] = await Promise.all([q(424_242), q(11), index.upsert([fresh])]);
  stored.set('fresh', fresh.vector);
  expect(first).toHaveLength(3);
  expect(second).toHaveLength(3);
  // Whatever the interleaving, the write is in the codes now.
  expect((await q(424_242))[0]).toMatchObject({ itemId: 'fresh' });
  await agrees(index, 'gus', stored, 99);
});
