/**
 * How exact the vector index's first pass is: top-k overlap of VectorIndex.query (resident codes on
 * SQLite: candidates by the estimate from centred sign bits, re-ranked by exact cosine) with an
 * exact cosine scan, at N vectors of one owner, for several least numbers of candidates:
 *
 *   npx tsx bench/retrieval/vector-exactness.ts        (N=100000, K=20; QUERIES=<n>, CANDIDATES=200,400,800)
 *
 * Vectors: 100,000 model embeddings take too long to compute here, so they are made from real ones.
 * The local model embeds BASE texts (sentence windows of the judged collection of corpus.ts, as
 * blob chunks are embedded); each stored vector is normalise(e_i + 0.6·e_j + g), e_i and e_j two
 * of those embeddings drawn at random and g Gaussian noise (σ 0.03 per dimension, |g| ≈ 0.68):
 * vectors in the region real embeddings occupy, with their skewed per-dimension signs, without
 * near-duplicate clusters. A second set is random unit vectors (no structure at all). Queries are
 * the model's embeddings of the collection's questions. Vectors are written the way svc writes
 * them (VectorIndex.upsert).
 *
 * Reports per set and number of candidates: mean and worst overlap of the top K with the exact top
 * K, at limit K and at the limit memory search asks for (100), query p50 and p95 (the index alone,
 * its candidates' float32 vectors read from SQLite included), and the time to build the codes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/infra/db/database';
import { migrateToLatest } from '../../src/infra/db/migrate';
import { createEmbedder, sentenceWindows, textForEmbedding } from '../../src/infra/embeddings';
import { createVectorIndex, loadVectorExtension } from '../../src/infra/vectors';
import { AcceleratedVectorIndex } from '../../src/infra/vectors/accelerated';
import { topK } from '../../src/infra/vectors/items';
import { ResidentAccelerator } from '../../src/infra/vectors/resident';
import { systemClock } from '../../src/lib/clock';
import { buildCorpus } from './corpus';
import { gaussian, pct, rng, unit } from './measure';

const N = Number(process.env.N ?? 100_000);
const K = Number(process.env.K ?? 20);
const BASE = Number(process.env.BASE ?? 2000);
const QUERIES = Number(process.env.QUERIES ?? 200);
/** Candidates re-ranked exactly, each measured (svc takes 400, 4 per result wanted, or 1/125 of the partition, whichever is most). */
const CANDIDATES = (process.env.CANDIDATES ?? '400,800,1600').split(',').map(Number);

const r = rng(7);
const gauss = gaussian(r);

async function main() {
  const config = loadConfig({ SVC_EMBEDDINGS: 'local', LOG_LEVEL: 'silent' });
  const embedder = createEmbedder({ ...config.vectors, embeddingsThreads: 2 })!;
  const { docs, queries } = buildCorpus(2000);
  const texts = docs.flatMap((d) => sentenceWindows(textForEmbedding(d.key, d.value, 20_000), 25)).slice(0, BASE);
  const t0 = performance.now();
  const base: Float32Array[] = [];
  for (let i = 0; i < texts.length; i += 64) base.push(...await embedder.embed(texts.slice(i, i + 64)));
  const qs = await embedder.embed(queries.slice(0, QUERIES).map((q) => q.q));
  console.error(`embedded ${base.length} texts and ${qs.length} questions in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  const dims = base[0]!.length;
  await embedder.close();

  const sets: [string, () => Float32Array][] = [
    ['embedding mixtures', () => {
      const a = base[Math.floor(r() * base.length)]!;
      const b = base[Math.floor(r() * base.length)]!;
      return unit(Float32Array.from(a, (x, d) => x + 0.6 * b[d]! + 0.03 * gauss()));
    }],
    ['random unit vectors', () => unit(Float32Array.from({ length: dims }, gauss))],
  ];
  for (const [name, make] of sets) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-vec-'));
    const h = openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 1 });
    try {
      const loadError = loadVectorExtension(h);
      if (loadError) throw new Error(loadError);
      await migrateToLatest(h.db);
      const index = await createVectorIndex(h, systemClock);
      const all: { itemId: string; vector: Float32Array }[] = [];
      const w0 = performance.now();
      for (let i = 0; i < N; i += 1000) {
        const batch = Array.from({ length: Math.min(1000, N - i) }, (_, j) => ({ itemId: `m${i + j}`, vector: make() }));
        all.push(...batch);
        await index.upsert(batch.map((b) => ({ collection: 'memory', ownerId: 'agent', itemId: b.itemId, itemVersion: 1, modelId: 'bench', vector: b.vector })));
      }
      console.error(`${name}: wrote ${N} vectors (${index.kind}) in ${((performance.now() - w0) / 1000).toFixed(0)} s`);
      const exactTop = qs.map((q) => new Set(topK(q, all, K).map((x) => x.itemId)));
      for (const candidates of CANDIDATES) {
        const resident = new AcceleratedVectorIndex(h.db, systemClock, new ResidentAccelerator(h.sqlite!, 2 ** 30, { min: candidates, share: 0 }));
        const b0 = performance.now();
        await resident.query({ collection: 'memory', ownerId: 'agent', modelId: 'bench', vector: qs[0]!, limit: 1 });
        const build = performance.now() - b0;
        for (const limit of [K, 100]) {
          const overlaps: number[] = [];
          const times: number[] = [];
          for (const [qi, q] of qs.entries()) {
            const started = performance.now();
            const got = await resident.query({ collection: 'memory', ownerId: 'agent', modelId: 'bench', vector: q, limit });
            times.push(performance.now() - started);
            overlaps.push(got.slice(0, K).filter((x) => exactTop[qi]!.has(x.itemId)).length / K);
          }
          const mean = overlaps.reduce((a, b) => a + b, 0) / overlaps.length;
          console.log(`${name}, ${N} vectors of one owner, ${candidates} candidates, query limit ${limit}: top-${K} overlap with an exact scan mean ${(100 * mean).toFixed(2)} %, worst ${(100 * Math.min(...overlaps)).toFixed(0)} %, queries with all ${K}: ${(100 * overlaps.filter((o) => o === 1).length / overlaps.length).toFixed(1)} %; query p50 ${pct(times, 0.5).toFixed(1)} ms, p95 ${pct(times, 0.95).toFixed(1)} ms (codes built in ${build.toFixed(0)} ms)`);
        }
      }
    } finally {
      await h.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

void main();
