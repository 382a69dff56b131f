// Runs the real model (USE lite, offline weights from node_modules) in its real worker thread.
// One embedder per file, so the model loads once (plus once more after the simulated crash).
import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EmbeddingError, LocalEmbedder, LocalEmbedderPool, cosine, createEmbedder } from './index';
import { loadConfig } from '../../config';

let local: LocalEmbedder;
beforeAll(async () => {
  // One thread, background batches capped by count only (the coalescing test below counts batches).
  const cfg = loadConfig({ SVC_EMBEDDINGS_THREADS: '1' }).vectors;
  local = new LocalEmbedder({ batchSize: cfg.embeddingsBatchSize, timeoutMs: cfg.embeddingsTimeoutMs, bulkBatchChars: Infinity });
  await local.embed(['warm up']);
});
afterAll(() => local?.close());

const sim = async (a: string, b: string) => {
  const [x, y] = await local.embed([a, b]);
  return cosine(x, y);
};

describe('local embedder (Universal Sentence Encoder lite)', () => {
  test('is the default, 512-d, named after the weights package', async () => {
    const dflt = createEmbedder(loadConfig({}).vectors); // SVC_EMBEDDINGS defaults to local, two threads
    expect(dflt).toBeInstanceOf(LocalEmbedderPool);
    expect((dflt as LocalEmbedderPool).stats()).toMatchObject({ threads: 2, workerStarts: 0 }); // nothing started yet
    expect(dflt!.modelId).toBe(local.modelId);
    await dflt!.close();
    expect(createEmbedder(loadConfig({ SVC_EMBEDDINGS_THREADS: '1' }).vectors)).toBeInstanceOf(LocalEmbedder);
    expect(local.dimensions).toBe(512);
    expect(local.modelId).toBe('use-lite-512@energetic-ai-0.2.0+lower');
  });

  test('returns one unit-length Float32Array of 512 per text, each with its own buffer', async () => {
    const out = await local.embed(['The user prefers dark mode.', 'Meeting moved to Thursday', '']);
    expect(out).toHaveLength(3);
    for (const v of out) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(512);
      expect(v.buffer.byteLength).toBe(512 * 4);
      let sq = 0;
      for (const x of v) sq += x * x;
      expect(Math.sqrt(sq)).toBeCloseTo(1, 4);
    }
    expect(await local.embed([])).toEqual([]);
  });

  test('related sentences are closer than unrelated ones', async () => {
    const pairs: [string, string, string][] = [
      ['The cat sat on the mat.', 'A kitten was resting on the rug.', 'Quarterly revenue grew by eight percent.'],
      ['Our PostgreSQL database runs out of connections.', 'The Postgres server hit its connection limit.', 'She enjoys hiking in the Alps.'],
      ['The user prefers replies in French.', 'Answer this person in French, please.', 'The build pipeline failed on the linter step.'],
    ];
    for (const [a, related, unrelated] of pairs) {
      expect(await sim(a, related)).toBeGreaterThan((await sim(a, unrelated)) + 0.2);
    }
  });

  test('a paraphrase is the nearest of several candidates', async () => {
    const query = 'How can I change my password?';
    const candidates = [
      'Steps to reset the login credentials for your account',
      'The office is closed on public holidays',
      'Invoices are sent on the first day of each month',
      'Our API rate limit is 100 requests per minute',
      'The team lunch is on Friday at noon',
    ];
    const [q, ...vs] = await local.embed([query, ...candidates]);
    const scores = vs.map((v) => cosine(q, v));
    expect(scores.indexOf(Math.max(...scores))).toBe(0);
  });

  test('deterministic: a text gets the same vector alone or inside a batch', async () => {
    const [alone] = await local.embed(['deploy on fridays is forbidden']);
    const batch = await local.embed(['something else', 'deploy on fridays is forbidden', 'and more']);
    expect(cosine(alone, batch[1])).toBeGreaterThan(0.9999);
  });

  test('calls that arrive while the thread is busy share the next batch; big calls are split', async () => {
    const before = local.stats().batches;
    const texts = Array.from({ length: 40 }, (_, i) => `note ${i} about the release checklist`);
    const big = local.embed(texts); // 40 > batch size 32: two batches
    await new Promise((r) => setImmediate(r)); // the first batch is now in the thread
    const singles = ['alpha project', 'beta launch', 'gamma ray'].map((t) => local.embed([t]));
    const [bigOut, ...singleOut] = await Promise.all([big, ...singles]);
    // batch 1: texts 0-31; batch 2: texts 32-39 + the three singles
    expect(local.stats().batches - before).toBe(2);
    expect(bigOut).toHaveLength(40);
    const check = await local.embed([texts[0], texts[39], 'beta launch']);
    expect(cosine(check[0], bigOut[0])).toBeGreaterThan(0.9999);
    expect(cosine(check[1], bigOut[39])).toBeGreaterThan(0.9999);
    expect(cosine(check[2], singleOut[1][0])).toBeGreaterThan(0.9999);
  });

  test('the event loop keeps running while a batch of 32 is embedded', async () => {
    const texts = Array.from({ length: 32 }, (_, i) => `memory ${i}: the staging database moves to a new region next week`);
    let last = performance.now();
    let maxGap = 0;
    let ticks = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 5);
    const started = performance.now();
    await local.embed(texts);
    const took = performance.now() - started;
    clearInterval(timer);
    // Run on this thread, the batch would block for all of `took` with no tick at all.
    expect(ticks).toBeGreaterThan(3);
    expect(maxGap).toBeLessThan(Math.max(took / 2, 60));
  });

  test('a crash of the thread rejects pending calls; the next call starts a new thread', async () => {
    const starts = local.stats().workerStarts;
    const pending = local.embed(Array.from({ length: 32 }, (_, i) => `pending text ${i}`));
    await new Promise((r) => setImmediate(r));
    // Simulate a crash: end the thread from outside, as an out-of-memory abort would.
    await (local as unknown as { worker: Worker }).worker.terminate();
    const err = await pending.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect((err as EmbeddingError).reason).toBe('worker_crashed');
    expect(local.stats().workerRunning).toBe(false);
    const [v] = await local.embed(['back again']);
    expect(v.length).toBe(512);
    expect(local.stats().workerStarts).toBe(starts + 1);
  });
});

describe('local embedder lifecycle', () => {
  test('nothing starts before the first call; a batch past the time limit fails and drops the thread', async () => {
    const e = new LocalEmbedder({ batchSize: 32, timeoutMs: 1 }); // the model cannot even load in 1 ms
    expect(e.stats().workerRunning).toBe(false);
    const err = await e.embed(['x']).then(() => undefined, (x: unknown) => x);
    expect((err as EmbeddingError).reason).toBe('timeout');
    expect(e.stats()).toMatchObject({ workerRunning: false, workerStarts: 1, failures: 1 });
    await e.close();
  });

  test('the model loads when the weights are read before the WASM backend has compiled', async () => {
    const e = new LocalEmbedder({ batchSize: 32, timeoutMs: 30_000, workerUrl: new URL('./fixtures/slow-wasm-worker.ts', import.meta.url) });
    try {
      const [v] = await e.embed(['a busy machine']);
      expect(v.length).toBe(512);
      const [ref] = await local.embed(['a busy machine']);
      expect(cosine(v, ref)).toBeCloseTo(1, 5);
    } finally {
      await e.close();
    }
  });

  test('after close() calls are refused', async () => {
    const e = new LocalEmbedder({ batchSize: 32, timeoutMs: 1000 });
    await e.close();
    const err = await e.embed(['x']).then(() => undefined, (x: unknown) => x);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect((err as EmbeddingError).reason).toBe('closed');
    expect(e.stats().workerStarts).toBe(0);
  });
});
