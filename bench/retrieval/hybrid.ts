/**
 * Retrieval quality of svc's memory search on the judged collection of corpus.ts (2,130 documents,
 * 267 questions), against a plain BM25 baseline computed in the same run over the same texts:
 *
 *   npx tsx bench/retrieval/hybrid.ts            (SQLite, local model; DOCS=500 for a short run)
 *
 * Reports nDCG@10 and Recall@20 for: plain BM25 (lower-cased words split on non-letters, no stemming,
 * k1 = 1.2, b = 0.75), svc's lexical half alone (LexicalIndex), svc's vector half alone (the local
 * model, best chunk), and svc's default search (GET /v1/memory/search, hybrid), overall and per
 * kind of question; recall at the default threshold (0.7); how long indexing took (memories/s until
 * the last vector was stored); search latency p50/p95 over the questions.
 */
import { createEmbedder, itemOfChunk, textForEmbedding } from '../../src/infra/embeddings';
import { createLexicalIndex } from '../../src/infra/lexical';
import { createVectorIndex } from '../../src/infra/vectors';
import { prepareHybrid, type HybridOptions } from '../../src/infra/vectors/hybrid';
import { systemClock } from '../../src/lib/clock';
import { registerAgent, startSvc } from '../harness';
import { buildCorpus, type Query } from './corpus';
import { firstRelevant, meanNdcg, pct, plainBm25, table, type Ranked } from './measure';

const DOCS = Number(process.env.DOCS ?? 2000);
const { docs, queries } = buildCorpus(DOCS);

async function main() {
  const s = await startSvc({ SVC_EMBEDDINGS: 'local', SVC_MEMORY_INDEX_INTERVAL_MS: '20', SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_METERING_ENABLED: 'false' });
  try {
    const agent = await registerAgent(s.url, 'retrieval');
    // A tier without a monthly write cap (the free tier stops at 1,000 writes).
    await s.svc.database.db.updateTable('agents').set({ tier: 'spark' }).where('agent_id', '=', agent.agentId).execute();
    const put = (key: string, value: unknown) => fetch(`${s.url}/v1/memory/${key}`, {
      method: 'PUT', headers: { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ value }),
    }).then((r) => { if (r.status !== 200) throw new Error(`PUT ${key}: ${r.status}`); });
    const t0 = performance.now();
    for (let i = 0; i < docs.length; i += 16) await Promise.all(docs.slice(i, i + 16).map((d) => put(d.key, d.value)));
    const putS = (performance.now() - t0) / 1000;
    const db = s.svc.database.db;
    const pendingNow = async () => Number((await db.selectFrom('vector_outbox').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    while ((await pendingNow()) > 0) await new Promise((r) => setTimeout(r, 250));
    const indexedS = (performance.now() - t0) / 1000;
    const chunks = Number((await db.selectFrom('vector_items').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    console.error(`indexed ${docs.length} memories (${chunks} chunk vectors): PUTs ${putS.toFixed(1)} s, searchable by meaning after ${indexedS.toFixed(1)} s`);

    const bm25Of = plainBm25(docs.map((d) => textForEmbedding(d.key, d.value, 1_000_000)));
    const bm25 = (q: string, k: number) => bm25Of(q, k).map((i) => docs[i]!.key);
    const lexical = createLexicalIndex(s.svc.database);
    const vectors = await createVectorIndex(s.svc.database, systemClock);
    const embedder = createEmbedder({ ...s.config.vectors, embeddingsThreads: 1 })!;
    // The same candidates fused otherwise, in process (the route's ranking is the noisy OR, weight 0.8).
    const fusions: [string, HybridOptions][] = [
      ['noisy OR, lexical weight 0.4', { lexicalWeight: 0.4 }], ['noisy OR, lexical weight 0.6', { lexicalWeight: 0.6 }],
      ['reciprocal rank fusion (k 60)', { fusion: 'rrf' }],
    ];
    const modes = ['bm25', 'lexical', 'vector', 'hybrid', ...fusions.map(([m]) => m)];
    const ranks: Record<string, Ranked<Query['kind']>[]> = Object.fromEntries(modes.map((m) => [m, []]));
    const hybridDeps = { db, embedder, index: vectors, lexical };
    const rankOf = (ranked: string[], key: string) => firstRelevant(ranked, (k) => k === key);
    let atDefault = 0;
    const latencies: number[] = [];
    for (const q of queries) {
      ranks.bm25!.push({ kind: q.kind, rank: rankOf(bm25(q.q, 20), q.relevant) });
      ranks.lexical!.push({ kind: q.kind, rank: rankOf((await lexical.query('memory', agent.agentId, q.q, 20)).map((h) => h.itemId), q.relevant) });
      const [v] = await embedder.embed([q.q], { priority: 'query' });
      const near = await vectors.query({ collection: 'memory', ownerId: agent.agentId, modelId: embedder.modelId, vector: v!, limit: 100 });
      ranks.vector!.push({ kind: q.kind, rank: rankOf([...new Set(near.map((h) => itemOfChunk(h.itemId)))], q.relevant) });
      const started = performance.now();
      const res = await fetch(`${s.url}/v1/memory/search?q=${encodeURIComponent(q.q.slice(0, 500))}&threshold=0&limit=20`, { headers: { authorization: `Bearer ${agent.apiKey}` } });
      latencies.push(performance.now() - started);
      const body = (await res.json()) as { results: { key: string; similarity: number }[] };
      ranks.hybrid!.push({ kind: q.kind, rank: rankOf(body.results.map((r) => r.key), q.relevant) });
      if (body.results.some((r) => r.key === q.relevant && r.similarity >= 0.7)) atDefault++;
      for (const [name, options] of fusions) {
        const { ranked } = await prepareHybrid(hybridDeps, 'memory', agent.agentId, q.q.slice(0, 500), 'hybrid', options);
        ranks[name]!.push({ kind: q.kind, rank: rankOf((await ranked(20)).map((h) => h.itemId), q.relevant) });
      }
    }
    await embedder.close();
    const nd = (m: string) => meanNdcg(ranks[m]!);
    console.log(`documents ${docs.length}, questions ${queries.length}; nDCG@10 / Recall@20`);
    console.log(table(ranks, ['paraphrase', 'exact', 'reworded']).join('\n'));
    console.log(`hybrid ÷ plain BM25 nDCG@10: ${(nd('hybrid') / nd('bm25')).toFixed(3)}×; ÷ svc lexical: ${(nd('hybrid') / nd('lexical')).toFixed(3)}×; ÷ vector: ${(nd('hybrid') / nd('vector')).toFixed(3)}×; reciprocal rank fusion ÷ plain BM25: ${(nd('reciprocal rank fusion (k 60)') / nd('bm25')).toFixed(3)}×`);
    console.log(`relevant document returned at the default threshold 0.7 (limit 20): ${(100 * atDefault / queries.length).toFixed(1)} %`);
    console.log(`search route latency over ${docs.length} memories: p50 ${pct(latencies, 0.5).toFixed(1)} ms, p95 ${pct(latencies, 0.95).toFixed(1)} ms`);
    console.log(`indexing: ${docs.length} memories (${chunks} chunks) searchable by meaning ${indexedS.toFixed(1)} s after the first PUT: ${(docs.length / indexedS).toFixed(1)} memories/s`);
  } finally {
    await s.close();
  }
}

void main();
