import { afterAll, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/engines';
import { ManualClock } from '../../lib/clock';
import { openDatabase, type DatabaseHandle } from '../db/database';
import { migrateToLatest } from '../db/migrate';
import { normaliseInPlace, type Embedder } from '../embeddings';
import { createVectorIndex, createVectorIndexer } from '.';

let tdb: TestDatabase;
let h: DatabaseHandle;
afterAll(async () => {
  await h?.close();
  await tdb?.close();
});

/** An embedder that takes `ms` per call and records whose texts it embedded, in order. */
function slowEmbedder(ms: number, calls: string[]): Embedder {
  return {
    modelId: 'slow-test', dimensions: 4,
    async embed(texts) {
      calls.push(texts[0].split(':')[0]);
      await new Promise((r) => setTimeout(r, ms));
      return texts.map(() => normaliseInPlace(Float32Array.from([1, 0.5, 0.25, 0.125])));
    },
    async close() {},
  };
}

test('a search\'s drain takes turns with other owners\' drains batch by batch: one owner\'s backlog does not hold up another\'s search', async () => {
  tdb = await createTestDatabase();
  h = openDatabase({ databaseUrl: tdb.env.DATABASE_URL, dataDir: tdb.dataDir, poolMax: 1 });
  await migrateToLatest(h.db);
  const clock = new ManualClock();
  const calls: string[] = [];
  const indexer = createVectorIndexer({
    db: h.db, index: await createVectorIndex(h, clock, { mode: 'exact' }), embedder: slowEmbedder(20, calls), clock, batchSize: 2, intervalMs: 60_000,
    sources: { c: async (owner, ids) => new Map(ids.map((id) => [id, { text: `${owner}:${id}`, version: 1 }])) },
  });
  await indexer.enqueue(h.db, 'c', 'big', Array.from({ length: 40 }, (_, i) => `i${i}`)); // 20 batches
  await indexer.enqueue(h.db, 'c', 'small', ['only']);
  const big = indexer.drain('c', 'big');
  // The big drain is under way: its first batch is with the model (a poll, not a fixed pause, which
  // on a loaded machine could let several batches go by first).
  for (let i = 0; i < 2000 && calls.length === 0; i++) await new Promise((r) => setTimeout(r, 1));
  expect(await indexer.drain('c', 'small')).toBe(1);
  expect(await big).toBe(40);
  // The small owner's batch ran after at most a couple of the big owner's, not after all twenty.
  expect(calls.indexOf('small')).toBeLessThan(4);
  expect(calls.filter((c) => c === 'big')).toHaveLength(20);
});

test('an item deleted while its text was being embedded gets no vector (no ghost taking a search slot)', async () => {
  const clock = new ManualClock();
  const live = new Set(['keep', 'gone']);
  const index = await createVectorIndex(h, clock, { mode: 'exact' });
  const indexer = createVectorIndexer({
    db: h.db, index, embedder: slowEmbedder(50, []), clock, batchSize: 10, intervalMs: 60_000,
    sources: { g: async (owner, ids) => new Map(ids.filter((id) => live.has(id)).map((id) => [id, { text: `${owner}:${id}`, version: 1 }])) },
  });
  await indexer.enqueue(h.db, 'g', 'o', ['keep', 'gone']);
  const drained = indexer.drain('g', 'o');
  await new Promise((r) => setTimeout(r, 20)); // texts read, the model is working
  live.delete('gone');
  await h.db.transaction().execute((trx) => indexer.forget(trx, 'g', 'o', ['gone'])); // the DELETE's own transaction
  await drained;
  const stored = await h.db.selectFrom('vector_items').select('item_id').where('collection', '=', 'g').execute();
  expect(stored.map((r) => r.item_id)).toEqual(['keep']);
});
