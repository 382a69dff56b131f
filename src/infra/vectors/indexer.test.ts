import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/engines';
import { ManualClock } from '../../lib/clock';
import { openDatabase, type DatabaseHandle } from '../db/database';
import { migrateToLatest } from '../db/migrate';
import { EmbeddingError, normaliseInPlace, type Embedder, type EmbeddingFailure } from '../embeddings';
import { createVectorIndex, createVectorIndexer } from '.';

let tdb: TestDatabase;
let h: DatabaseHandle;
beforeAll(async () => {
  tdb = await createTestDatabase();
  h = openDatabase({ databaseUrl: tdb.env.DATABASE_URL, dataDir: tdb.dataDir, poolMax: 1 });
  await migrateToLatest(h.db);
});
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

test('a background step embeds a lane\'s next batch while it stores the one before; every batch is stored', async () => {
  const clock = new ManualClock();
  const events: string[] = [];
  const inner = await createVectorIndex(h, clock, { mode: 'exact' });
  // Storing takes 40 ms here, embedding 20: a lane that waited for each store before embedding again would alternate.
  const index = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'upsert') {
        return async (...args: Parameters<typeof inner.upsert>) => {
          events.push('store');
          await new Promise((r) => setTimeout(r, 40));
          await inner.upsert(...args);
          events.push('stored');
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const embedder = slowEmbedder(20, []);
  const indexer = createVectorIndexer({
    db: h.db, index, clock, batchSize: 2, intervalMs: 60_000, parallel: 1,
    embedder: { ...embedder, embed: async (texts, opts) => { events.push('embed'); return embedder.embed(texts, opts); } },
    sources: { lanes: async (owner, ids) => new Map(ids.map((id) => [id, { text: `${owner}:${id}`, version: 1 }])) },
  });
  await indexer.enqueue(h.db, 'lanes', 'piper', ['a', 'b', 'c', 'd', 'e', 'f']); // three batches, one step
  await indexer.flush();
  expect(events.filter((e) => e === 'embed')).toHaveLength(3);
  expect(events.filter((e) => e === 'stored')).toHaveLength(3);
  // The second batch went to the model before the first batch's vectors were stored.
  expect(events.indexOf('embed', 1)).toBeLessThan(events.indexOf('stored'));
  expect(await indexer.pending('lanes', 'piper')).toBe(0);
  const hits = await inner.query({ collection: 'lanes', ownerId: 'piper', modelId: 'slow-test', vector: normaliseInPlace(Float32Array.from([1, 0.5, 0.25, 0.125])), limit: 10 });
  expect(hits.map((x) => x.itemId).sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
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

/**
 * A model that refuses any batch holding a text with `bad` in it, the way an embeddings server answers
 * 400 for a text over its token limit (failing with `reason`), and records every batch it is sent.
 */
function refusingEmbedder(isBad: (text: string) => boolean, batches: string[][], reason: EmbeddingFailure = 'input_rejected'): Embedder {
  return {
    modelId: 'refusing-test', dimensions: 4,
    async embed(texts) {
      batches.push(texts);
      if (texts.some(isBad)) throw new EmbeddingError('embeddings server answered 400: too many tokens', reason);
      return texts.map(() => normaliseInPlace(Float32Array.from([1, 0.5, 0.25, 0.125])));
    },
    async close() {},
  };
}

const MIN = 60_000;
const outboxRow = (collection: string, item: string) => h.db.selectFrom('vector_outbox').select(['attempts', 'not_before'])
  .where('collection', '=', collection).where('item_id', '=', item).executeTakeFirst();
const vectorsOf = async (collection: string) => (await h.db.selectFrom('vector_items').select('item_id')
  .where('collection', '=', collection).orderBy('item_id').execute()).map((r) => r.item_id);

test('a text the model refuses is isolated by halving the batch: its neighbours get vectors, it waits a minute, doubling, and no longer blocks the queue', async () => {
  const clock = new ManualClock();
  const texts = new Map(Array.from({ length: 8 }, (_, i) => [`i${i}`, `text ${i}`]));
  texts.set('i5', 'BAD text');
  const batches: string[][] = [];
  const logged: string[] = [];
  const indexer = createVectorIndexer({
    db: h.db, index: await createVectorIndex(h, clock, { mode: 'exact' }), embedder: refusingEmbedder((t) => t.startsWith('BAD'), batches),
    clock, batchSize: 8, intervalMs: 60_000, log: (msg) => logged.push(msg),
    sources: { p: async (_owner, ids) => new Map(ids.filter((id) => texts.has(id)).map((id) => [id, { text: texts.get(id)!, version: 1 }])) },
  });
  await indexer.enqueue(h.db, 'p', 'o', [...texts.keys()]);
  await indexer.flush(); // before: the oldest batch failed for ever, and nothing behind it was indexed

  expect(await vectorsOf('p')).toEqual(['i0', 'i1', 'i2', 'i3', 'i4', 'i6', 'i7']);
  // 8 refused → i0–i3 stored, i4–i7 refused → i4–i5 refused → i4 stored, i5 refused alone → i6–i7
  // stored: the refused text found in 2·log2(8) + 1 calls.
  expect(batches.map((b) => b.length)).toEqual([8, 4, 4, 2, 1, 1, 2]);
  expect(await outboxRow('p', 'i5')).toEqual({ attempts: 1, not_before: clock.now() + MIN });
  expect(logged).toHaveLength(1);
  expect(logged[0]).toContain('"i5"');

  // Waiting: neither the loop nor a search's drain sends it again, so the owner's search answers.
  batches.length = 0;
  await indexer.flush();
  expect(await indexer.drain('p', 'o')).toBe(0);
  expect(batches).toEqual([]);

  // Its time come, it is refused again and waits twice as long.
  clock.advance(MIN);
  await indexer.flush();
  expect(batches).toEqual([['BAD text']]);
  expect(await outboxRow('p', 'i5')).toEqual({ attempts: 2, not_before: clock.now() + 2 * MIN });

  // A new write of the item (a new text) is ready at once and gets its vector.
  texts.set('i5', 'fixed text');
  await indexer.enqueue(h.db, 'p', 'o', ['i5']);
  expect(await outboxRow('p', 'i5')).toEqual({ attempts: 0, not_before: null });
  expect(await indexer.drain('p', 'o')).toBe(1);
  expect(await vectorsOf('p')).toContain('i5');
  expect(await outboxRow('p', 'i5')).toBeUndefined();
});

test('a refused new text drops the vector of the item\'s earlier text; the local model throwing on a text counts as a refusal', async () => {
  const clock = new ManualClock();
  const texts = new Map([['a', 'good'], ['b', 'good too']]);
  const indexer = createVectorIndexer({
    db: h.db, index: await createVectorIndex(h, clock, { mode: 'exact' }), embedder: refusingEmbedder((t) => t === 'BAD', [], 'model_error'),
    clock, batchSize: 10, intervalMs: 60_000,
    sources: { q: async (_owner, ids) => new Map(ids.map((id) => [id, { text: texts.get(id)!, version: 1 }])) },
  });
  await indexer.enqueue(h.db, 'q', 'o', ['a', 'b']);
  await indexer.flush();
  expect(await vectorsOf('q')).toEqual(['a', 'b']);
  texts.set('b', 'BAD');
  await indexer.enqueue(h.db, 'q', 'o', ['b']);
  expect(await indexer.drain('q', 'o')).toBe(1);
  expect(await vectorsOf('q')).toEqual(['a']); // not found by words it no longer holds
  expect((await outboxRow('q', 'b'))?.attempts).toBe(1);
});

test('a failure that is not the text\'s fault (server away, rate limited) fails the batch as before: nothing is set aside', async () => {
  const clock = new ManualClock();
  const batches: string[][] = [];
  for (const reason of ['network', 'rate_limited', 'upstream_status', 'timeout'] as const) {
    const collection = `t-${reason}`;
    const indexer = createVectorIndexer({
      db: h.db, index: await createVectorIndex(h, clock, { mode: 'exact' }), embedder: refusingEmbedder(() => true, batches, reason),
      clock, batchSize: 10, intervalMs: 60_000,
      sources: { [collection]: async (_owner, ids) => new Map(ids.map((id) => [id, { text: id, version: 1 }])) },
    });
    await indexer.enqueue(h.db, collection, 'o', ['x', 'y']);
    batches.length = 0;
    await expect(indexer.drain(collection, 'o')).rejects.toMatchObject({ reason });
    expect(batches).toHaveLength(1); // no halving
    expect(await outboxRow(collection, 'x')).toEqual({ attempts: 0, not_before: null });
    await h.db.deleteFrom('vector_outbox').where('collection', '=', collection).execute();
  }
});

test('a background step stops taking batches at the first failure that is not the text\'s fault; nothing is lost', async () => {
  const clock = new ManualClock();
  const calls: string[] = [];
  // The model times out on the batch holding "a" and answers the others after 10 ms.
  const embedder: Embedder = {
    modelId: 'flaky-test', dimensions: 4,
    async embed(texts) {
      calls.push(texts.join());
      if (texts.includes('a')) throw new EmbeddingError('local embedding batch took too long', 'timeout');
      await new Promise((r) => setTimeout(r, 10));
      return texts.map(() => normaliseInPlace(Float32Array.from([1, 0.5, 0.25, 0.125])));
    },
    async close() {},
  };
  const indexer = createVectorIndexer({
    db: h.db, index: await createVectorIndex(h, clock, { mode: 'exact' }), embedder, clock, batchSize: 1, intervalMs: 60_000, parallel: 2,
    sources: { 'step-fail': async (_owner, ids) => new Map(ids.map((id) => [id, { text: id, version: 1 }])) },
  });
  await indexer.enqueue(h.db, 'step-fail', 'o', ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']); // eight batches, four per lane, one step
  await expect(indexer.flush()).rejects.toMatchObject({ reason: 'timeout' });
  // The other lane finished the batch it had under way and took no more.
  expect(calls).toEqual(['a', 'b']);
  expect(await indexer.pending('step-fail', 'o')).toBe(7);
});

test('a start of the process tries refused items again at once (the operator may have fixed the model)', async () => {
  const clock = new ManualClock();
  let refuse = true;
  const logged: string[] = [];
  const indexer = createVectorIndexer({
    db: h.db, index: await createVectorIndex(h, clock, { mode: 'exact' }), embedder: refusingEmbedder(() => refuse, []),
    clock, batchSize: 10, intervalMs: 5, log: (msg) => logged.push(msg),
    sources: { r: async (_owner, ids) => new Map(ids.map((id) => [id, { text: id, version: 1 }])) },
  });
  await h.db.deleteFrom('vector_outbox').execute(); // the loop takes any collection's rows: only this test's
  await indexer.enqueue(h.db, 'r', 'o', ['long']);
  await indexer.flush();
  expect((await outboxRow('r', 'long'))?.not_before).toBe(clock.now() + MIN);
  refuse = false; // a model with a larger limit, or truncation turned on
  indexer.start();
  try {
    await expect.poll(() => vectorsOf('r'), { timeout: 5000 }).toEqual(['long']);
    expect(logged).toContain('vector indexing: 1 item(s) whose text the model refused before are tried again now');
  } finally {
    await indexer.stop();
  }
});

test('a source added with windowWords is embedded as windows of whole sentences, each its own vector; others as one text', async () => {
  const clock = new ManualClock();
  const seen: string[] = [];
  const embedder: Embedder = {
    modelId: 'window-test', dimensions: 4, chunkWords: 90,
    async embed(texts) {
      seen.push(...texts);
      return texts.map(() => normaliseInPlace(Float32Array.from([1, 0.5, 0.25, 0.125])));
    },
    async close() {},
  };
  const text = 'Row one of the sheet. Row two is here.\nRow three closes it.';
  const indexer = createVectorIndexer({ db: h.db, index: await createVectorIndex(h, clock, { mode: 'exact' }), embedder, clock, batchSize: 10, intervalMs: 60_000 });
  indexer.addSource('win-w', async (_owner, ids) => new Map(ids.map((id) => [id, { text, version: 1 }])), { windowWords: 6 });
  indexer.addSource('win-p', async (_owner, ids) => new Map(ids.map((id) => [id, { text, version: 1 }])));
  await indexer.enqueue(h.db, 'win-w', 'o', ['doc']);
  await indexer.enqueue(h.db, 'win-p', 'o', ['doc']);
  await indexer.drain('win-w', 'o');
  await indexer.drain('win-p', 'o');
  expect(seen).toEqual(['Row one of the sheet.', 'Row two is here.', 'Row three closes it.', 'Row one of the sheet. Row two is here. Row three closes it.']);
  const stored = await h.db.selectFrom('vector_items').select(['collection', 'item_id']).where('collection', 'in', ['win-w', 'win-p']).orderBy('collection').orderBy('item_id').execute();
  expect(stored.map((r) => `${r.collection}/${r.item_id}`)).toEqual(['win-p/doc', 'win-w/doc', 'win-w/doc#1', 'win-w/doc#2']);
});
