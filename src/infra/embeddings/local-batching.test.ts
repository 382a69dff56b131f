// The local embedder's batching with a stand-in thread (fixtures/poison-worker.ts: the same protocol
// as local-worker.ts, no model), so a batch the model throws on can be produced on demand.
import { afterEach, describe, expect, test, vi } from 'vitest';
import { EmbeddingError, LocalEmbedder, LocalEmbedderPool, blamesInput } from './index';
import { threadNices } from '../../lib/fixtures/thread-nice';

const workerUrl = new URL('./fixtures/poison-worker.ts', import.meta.url);
let e: LocalEmbedder;
afterEach(() => e?.close());

const outcome = (p: Promise<Float32Array[]>) =>
  p.then((v) => ({ ok: true as const, v }), (err: unknown) => ({ ok: false as const, err: err as EmbeddingError }));

describe('local embedder: a batch the model throws on', () => {
  test('merged calls: only the call with the text the model cannot take fails; the others get vectors', async () => {
    e = new LocalEmbedder({ batchSize: 32, timeoutMs: 10_000, workerUrl });
    // Made together, the three calls share one batch.
    const [a, bad, b] = await Promise.all([
      outcome(e.embed(['alpha', 'beta'])),
      outcome(e.embed(['fine', 'POISON here'])),
      outcome(e.embed(['gamma'])),
    ]);
    expect(a.ok && a.v.length === 2 && a.v.every((x) => x.length === 512)).toBe(true);
    expect(b.ok && b.v.length === 1).toBe(true);
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.err).toBeInstanceOf(EmbeddingError);
      expect(bad.err.reason).toBe('model_error');
      expect(blamesInput(bad.err)).toBe(true);
    }
    // One merged batch, then each of the three parts on its own.
    expect(e.stats()).toMatchObject({ batches: 4, failures: 0, workerRunning: true, queued: 0, busy: false });
  });

  test('a call alone in its batch fails at once, with no second try', async () => {
    e = new LocalEmbedder({ batchSize: 32, timeoutMs: 10_000, workerUrl });
    const r = await outcome(e.embed(['POISON']));
    expect(!r.ok && r.err.reason).toBe('model_error');
    expect(e.stats().batches).toBe(1);
    // The thread is still usable.
    expect((await e.embed(['after'])).length).toBe(1);
  });

  test('a call split across batches: its good part is not sent again, its failing part fails it once', async () => {
    e = new LocalEmbedder({ batchSize: 4, timeoutMs: 10_000, workerUrl });
    const big = ['t1', 't2', 't3', 't4', 't5', 'POISON', 't7'];
    const [r, other] = await Promise.all([outcome(e.embed(big)), outcome(e.embed(['other']))]);
    // Batch 1: t1-t4 (fine). Batch 2: t5, POISON, t7 + 'other' (fails) → each part alone: big's part
    // fails and rejects big, 'other' gets its vector.
    expect(!r.ok && r.err.reason).toBe('model_error');
    expect(other.ok && other.v.length === 1).toBe(true);
    expect(e.stats()).toMatchObject({ batches: 4, queued: 0, busy: false });
  });

  test('calls queued behind the parts sent again still get their answers, in order', async () => {
    e = new LocalEmbedder({ batchSize: 32, timeoutMs: 10_000, workerUrl });
    const first = Promise.all([outcome(e.embed(['POISON'])), outcome(e.embed(['x']))]);
    await new Promise((r) => setImmediate(r)); // the merged batch is in the thread
    const later = outcome(e.embed(['y', 'z']));
    const [[p, x], yz] = await Promise.all([first, later]);
    expect(p.ok).toBe(false);
    expect(x.ok).toBe(true);
    expect(yz.ok && yz.v.length === 2).toBe(true);
  });
});

describe('local embedder pool: a search while every thread is busy', () => {
  test('goes to a thread kept for searches once it is ready (started the first time; the query meanwhile waits on a busy thread)', async () => {
    const pool = new LocalEmbedderPool({ batchSize: 1, timeoutMs: 10_000, workerUrl, threads: 1 });
    try {
      const bulk = () => pool.embed(Array.from({ length: 200 }, (_, i) => `bulk ${i}`));
      const first = bulk();
      const [q1] = await pool.embed(['first query'], { priority: 'query' }); // the search thread starts meanwhile
      expect(q1).toHaveLength(512);
      await first;
      expect(pool.stats().search).toMatchObject({ workerStarts: 1 });
      // Its model is ready once it has answered its warm-up text (a thread start takes longer on a busy machine).
      await vi.waitFor(() => expect(pool.stats().search).toMatchObject({ texts: 1, busy: false }), { timeout: 20_000 });
      const second = bulk();
      await pool.embed(['second query'], { priority: 'query' });
      expect(pool.stats().search!.texts).toBe(2); // the warm-up text and this query
      await second;
      // With an idle thread a query takes it: the search thread is not used.
      await pool.embed(['idle query'], { priority: 'query' });
      expect(pool.stats().search!.texts).toBe(2);
    } finally {
      await pool.close();
    }
  });
});

const NICE = 10;
describe.runIf(process.platform === 'linux')('local embedder pool: background threads at a lower priority', () => {
  test('a search goes to the search thread while any background thread is busy; only background threads are niced', async () => {
    const before = threadNices().filter((n) => n === NICE).length;
    const pool = new LocalEmbedderPool({ batchSize: 1, timeoutMs: 10_000, workerUrl, threads: 2, backgroundNice: NICE });
    try {
      await pool.embed(['warm'], { priority: 'query' }); // all idle: a background thread takes it
      expect(pool.stats().search).toBeUndefined();
      const bulk = () => pool.embed(Array.from({ length: 200 }, (_, i) => `bulk ${i}`));
      const first = bulk(); // one thread busy, the other idle
      await pool.embed(['query one'], { priority: 'query' }); // starts the search thread
      await first;
      await vi.waitFor(() => expect(pool.stats().search).toMatchObject({ texts: 1, busy: false }), { timeout: 20_000 }); // its model is ready
      const second = bulk();
      await pool.embed(['query two'], { priority: 'query' });
      expect(pool.stats().search!.texts).toBe(2); // its warm-up text and the second query: not the idle background thread
      await second;
      expect(pool.stats()).toMatchObject({ workerStarts: 2 });
      // Two background threads niced, the search thread and this one not.
      expect(threadNices().filter((n) => n === NICE).length - before).toBe(2);
      expect(threadNices()[0]).toBe(0);
    } finally {
      await pool.close();
    }
  });

  test('by default (SVC_EMBEDDINGS_BACKGROUND_NICE=0) no thread is niced, and a search takes an idle background thread', async () => {
    const niced = () => threadNices().filter((n) => n !== 0).length;
    const before = niced();
    const pool = new LocalEmbedderPool({ batchSize: 1, timeoutMs: 10_000, workerUrl, threads: 2 });
    try {
      await Promise.all([pool.embed(['a']), pool.embed(['b'])]);
      expect(pool.stats()).toMatchObject({ workerStarts: 2 });
      const bulk = pool.embed(Array.from({ length: 200 }, (_, i) => `bulk ${i}`)); // one thread busy
      await pool.embed(['query'], { priority: 'query' });
      await bulk;
      expect(pool.stats().search).toBeUndefined(); // the idle background thread answered it
      expect(niced()).toBe(before);
    } finally {
      await pool.close();
    }
  });
});
