import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config';
import { createEmbedder, textForEmbedding } from '../src/infra/embeddings';
import { createLexicalIndex } from '../src/infra/lexical';
import { createVectorIndex } from '../src/infra/vectors';
import { systemClock } from '../src/lib/clock';
import { registerAgent, startSvc } from './harness';
import { buildCorpus } from './retrieval/corpus';
import { gaussian, pct, rng, unit } from './retrieval/measure';

/**
 * Memory search latency at scale: `GET /v1/memory/search` (hybrid, query embedding by the local
 * model included, limit 5) over one agent holding N memories (default 100,000; `--memories 10000`),
 * sequential requests on an idle service, p50 and p95, beside the parts measured alone in the same
 * run: the query's embedding, the vector index's query (resident codes, candidates re-ranked
 * exactly; its own instance in this process) and the lexical half.
 *
 * The memories are the generated operations notes of bench/retrieval/corpus.ts, stored over HTTP
 * (memory rows and the lexical index as a PUT writes them). Embedding 100,000 texts takes longer
 * than a benchmark should (bench/memory-search.ts measures the indexing of a 10,000 burst), so the
 * vectors are made as bench/retrieval/vector-exactness.ts makes them: the local model embeds BASE
 * of the notes (default 300) and every memory's vector is normalise(e_i + 0.6·e_j + g) of two of
 * them and Gaussian noise, in the region real embeddings occupy. They are stored under the local
 * model's id, so the route compares real query embeddings with them as with its own.
 *
 * Then, with `--backlog N` (default 5,000), the same agent writes N more memories at once to a svc
 * whose background indexer runs as by default, and searches while they are being embedded.
 *
 * With SCALE_DIR=<dir> the data directory is kept there, and a later run with the same SCALE_DIR and
 * --memories reuses it instead of storing the memories again (seeding 100,000 takes minutes). Seed
 * it with --backlog 0; a run with a backlog then works on a copy of it.
 *
 *   npx tsx bench/memory-search-scale.ts [--memories 100000] [--queries 200] [--backlog 5000]
 */
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('--memories', 100_000);
const QUERIES = arg('--queries', 200);
/** Memories written at once after the measurement without a backlog, searched while they are embedded (0: none). */
const BACKLOG = arg('--backlog', 5000);
const BASE = Number(process.env.BASE ?? 300);
const log = (...a: unknown[]) => console.log(new Date().toISOString().slice(11, 19), ...a);

const r = rng(29);
const gauss = gaussian(r);

// The background indexer does not run here: every memory gets its vector from this bench. The
// backlog is written to a second svc on the same data directory, whose indexer runs as by default.
const reuse = process.env.SCALE_DIR;
const seededIn = (d: string) => join(d, `seeded-${N}.json`);
if (reuse && BACKLOG > 0 && !existsSync(seededIn(reuse))) throw new Error('SCALE_DIR: seed it first with --backlog 0 (the backlog is written to a copy)');
// A run with a backlog writes to a copy of the reused directory, so the directory stays as seeded.
const keep = reuse && BACKLOG === 0 ? reuse : undefined;
const dir = keep ?? mkdtempSync(join(tmpdir(), 'svc-scale-'));
if (keep) mkdirSync(keep, { recursive: true });
if (reuse && !keep) cpSync(reuse, dir, { recursive: true });
const seededFile = seededIn(dir);
const seeded = existsSync(seededFile) ? (JSON.parse(readFileSync(seededFile, 'utf8')) as { apiKey: string; agentId: string }) : undefined;
const settings = { SVC_DATA_DIR: dir, SVC_EMBEDDINGS: 'local', SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_METERING_ENABLED: 'false' };
let svc = await startSvc({ ...settings, SVC_MEMORY_INDEX_INTERVAL_MS: '600000' });
const db = svc.svc.database.db;
try {
  const { docs, queries } = buildCorpus(Math.max(0, N - 130));
  const items = docs.slice(0, N);
  const agent = seeded ?? await registerAgent(svc.url, 'scale-agent');
  if (!seeded) await db.updateTable('agents').set({ tier: 'pro' }).where('agent_id', '=', agent.agentId).execute();
  let t0 = performance.now();
  const put = async (all: { key: string; value: unknown }[]) => {
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < all.length) {
        const it = all[next++]!;
        const res = await fetch(`${svc.url}/v1/memory/${encodeURIComponent(it.key)}`, {
          method: 'PUT', headers: { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ value: it.value }),
        });
        if (res.status !== 200) throw new Error(`PUT ${it.key}: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
    }));
  };
  const embedder = createEmbedder(loadConfig({ SVC_EMBEDDINGS: 'local' }).vectors)!;
  const index = await createVectorIndex(svc.svc.database, systemClock);
  if (!seeded) {
    await put(items);
    log(`stored ${items.length} memories over HTTP in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

    t0 = performance.now();
    const texts = items.slice(0, BASE).map((d) => textForEmbedding(d.key, d.value, 2000));
    const base: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 64) base.push(...await embedder.embed(texts.slice(i, i + 64)));
    log(`embedded ${base.length} notes in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    await db.deleteFrom('vector_outbox').where('owner_id', '=', agent.agentId).execute();
    for (let i = 0; i < items.length; i += 1000) {
      await index.upsert(items.slice(i, i + 1000).map((d, j) => {
        const a = base[(i + j) % base.length]!;
        const b = base[Math.floor(r() * base.length)]!;
        return { collection: 'memory', ownerId: agent.agentId, itemId: d.key, itemVersion: 1, modelId: embedder.modelId, vector: unit(Float32Array.from(a, (x, k) => x + 0.6 * b[k]! + 0.03 * gauss())) };
      }));
    }
    log(`stored ${items.length} vectors`);
    if (keep) writeFileSync(seededFile, JSON.stringify({ apiKey: agent.apiKey, agentId: agent.agentId }));
  } else log(`reusing the ${N} memories in ${dir}`);

  const questions = queries.map((q) => q.q);
  const search = async (q: string) => {
    const s = performance.now();
    const res = await fetch(`${svc.url}/v1/memory/search?q=${encodeURIComponent(q)}&limit=5`, { headers: { authorization: `Bearer ${agent.apiKey}` } });
    const body = (await res.json()) as { pending_embeddings?: number };
    if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(body)}`);
    return { ms: performance.now() - s, pending: body.pending_embeddings ?? 0 };
  };
  t0 = performance.now();
  await search(questions[0]!);
  log(`first search (builds the resident codes of ${items.length} vectors): ${(performance.now() - t0).toFixed(0)} ms`);
  for (let i = 1; i < 20; i++) await search(questions[i % questions.length]!);
  const full: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const { ms, pending } = await search(`${questions[(i + 20) % questions.length]}${i + 20 >= questions.length ? ' please' : ''}`);
    if (pending) throw new Error(`search: ${pending} pending`);
    full.push(ms);
  }

  // The parts alone, same questions.
  const vectors = await embedder.embed(questions.slice(0, 50));
  const embedTimes: number[] = [];
  for (let i = 0; i < 100; i++) {
    const s = performance.now();
    await embedder.embed([`${questions[i % questions.length]} ${i}`], { priority: 'query' });
    embedTimes.push(performance.now() - s);
  }
  const knn: number[] = [];
  await index.query({ collection: 'memory', ownerId: agent.agentId, modelId: embedder.modelId, vector: vectors[0]!, limit: 100 }); // builds its codes
  for (let i = 0; i < 200; i++) {
    const s = performance.now();
    await index.query({ collection: 'memory', ownerId: agent.agentId, modelId: embedder.modelId, vector: vectors[i % vectors.length]!, limit: 100 });
    knn.push(performance.now() - s);
  }
  const lexical: number[] = [];
  const words = createLexicalIndex(svc.svc.database);
  for (let i = 0; i < 200; i++) {
    const s = performance.now();
    await words.query('memory', agent.agentId, questions[i % questions.length]!, 50);
    lexical.push(performance.now() - s);
  }
  await embedder.close();
  const f = (xs: number[]) => `p50 ${pct(xs, 0.5).toFixed(1)} ms, p95 ${pct(xs, 0.95).toFixed(1)} ms`;
  log(`full search over ${items.length} memories (${QUERIES} queries): ${f(full)}`);
  log(`parts alone: query embedding ${f(embedTimes)}; vector index (limit 100) ${f(knn)}; lexical half (50) ${f(lexical)}`);

  if (BACKLOG > 0) {
    await svc.close();
    svc = await startSvc(settings);
    await search(questions[0]!); // this process builds the codes
    for (let i = 1; i < 20; i++) await search(questions[i % questions.length]!);
    t0 = performance.now();
    await put(items.slice(0, BACKLOG).map((d) => ({ key: `backlog.${d.key}`, value: d.value })));
    log(`stored ${BACKLOG} more memories over HTTP in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const during: number[] = [];
    const pendingSeen: number[] = [];
    for (let i = 0; i < QUERIES; i++) {
      const { ms, pending } = await search(questions[(i + 40) % questions.length]!);
      during.push(ms);
      pendingSeen.push(pending);
    }
    log(`full search over ${items.length + BACKLOG} memories while the ${BACKLOG} just written are embedded (${QUERIES} queries): ${f(during)}; `
      + `pending_embeddings ${pendingSeen[0]} at the first answer, ${pendingSeen[pendingSeen.length - 1]} at the last, > 0 in ${pendingSeen.filter((p) => p > 0).length}`);
  }
} finally {
  await svc.close();
  if (!keep) rmSync(dir, { recursive: true, force: true });
}
