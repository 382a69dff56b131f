/**
 * The resident codes' first pass (candidates by the estimate from centred sign bits, then exact
 * cosine) agrees with an exact scan: top-20 overlap of at least 99 % at 10,000 vectors of one owner,
 * on vectors shaped like a text model's (near one mean direction, varying along few directions, mixed
 * from 2,000 "topics"). Hamming distance between sign codes with the same 400 candidates gave
 * 90.5 % here; the local model's embeddings: bench/retrieval/vector-exactness.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { openDatabase } from '../db/database';
import { migrateToLatest } from '../db/migrate';
import { createVectorIndex } from '.';
import { gaussian, rng, unit } from '../../../bench/retrieval/measure';
import { topK } from './items';

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('top-20 of the resident index agrees with an exact scan on at least 99 % at 10,000 vectors', async () => {
  const D = 512;
  // Topics spread over a 32-dimensional subspace around one mean direction: embeddings of text vary
  // along far fewer directions than they have dimensions (random directions in all 512 would be
  // the worst case for sign bits, and unlike any model's output).
  const SUBSPACE = 32;
  const r = rng(11);
  const gauss = gaussian(r);
  const mean = unit(Float32Array.from({ length: D }, gauss));
  const basis = Array.from({ length: SUBSPACE }, () => Float32Array.from({ length: D }, gauss));
  const topics = Array.from({ length: 2000 }, () => {
    const z = Array.from({ length: SUBSPACE }, gauss);
    const noise = unit(Float32Array.from({ length: D }, (_, d) => z.reduce((a, zz, j) => a + zz * basis[j]![d]!, 0)));
    return unit(mean.map((m, d) => 0.75 * m + 0.66 * noise[d]!));
  });
  const pick = () => topics[Math.floor(r() * topics.length)]!;
  const items = Array.from({ length: 10_000 }, (_, i) => {
    const a = pick();
    const b = pick();
    return { itemId: `m${i}`, vector: unit(a.map((x, d) => x + 0.6 * b[d]! + 0.03 * gauss())) };
  });
  const queries = Array.from({ length: 30 }, () => unit(pick().map((x) => x + 0.03 * gauss())));

  const dir = mkdtempSync(join(tmpdir(), 'svc-exactness-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const h = openDatabase({ dataDir: dir, poolMax: 1 });
  cleanups.push(() => h.close());
  await migrateToLatest(h.db);
  const index = await createVectorIndex(h, new ManualClock());
  expect(index.kind).toBe('resident');
  for (let i = 0; i < items.length; i += 1000) {
    await index.upsert(items.slice(i, i + 1000).map((it) => ({ collection: 'memory', ownerId: 'a', itemId: it.itemId, itemVersion: 1, modelId: 'm', vector: it.vector })));
  }
  let overlap = 0;
  for (const q of queries) {
    const exact = new Set(topK(q, items, 20).map((x) => x.itemId));
    const got = await index.query({ collection: 'memory', ownerId: 'a', modelId: 'm', vector: q, limit: 20 });
    expect(got).toHaveLength(20);
    overlap += got.filter((x) => exact.has(x.itemId)).length / 20;
  }
  expect(overlap / queries.length).toBeGreaterThanOrEqual(0.99);
}, 120_000);
