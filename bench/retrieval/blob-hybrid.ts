/**
 * Retrieval quality of svc's blob (document) search on the judged collection of corpus.ts, the
 * documents uploaded as files a user would keep them in, parsed by svc, and searched through
 * GET /v1/blobs/search; against plain BM25 over the same chunks in the same run:
 *
 *   npx tsx bench/retrieval/blob-hybrid.ts       (SQLite, local model; DOCS=<n> generated notes, default 2,000)
 *
 * Files: the 130 memories of dataset.json as two CSV files (key, value); the generated notes 20 to
 * a file, in turn a DOCX (a heading per note, then its text), a PDF (the same, wrapped on pages) and
 * a CSV (title, text). Each file is uploaded (PUT /v1/blobs, multipart) and parsed
 * (POST /v1/blobs/{id}/parse); its chunks are what every mode below ranks.
 *
 * A chunk answers a question when it holds one of the relevant document's marks (corpus.ts: the
 * memory's key; the note's event sentence or error code), compared case-insensitively with
 * whitespace collapsed. nDCG@10 and Recall@20 over the ranked chunks, first answering chunk
 * (binary judgement), for: plain BM25 over the stored chunk texts, svc's lexical half, its vector
 * half, the route (svc's fusion), and in process on the same candidates: reciprocal rank fusion and
 * the noisy OR with other lexical weights.
 */
import { createEmbedder } from '../../src/infra/embeddings';
import { createLexicalIndex } from '../../src/infra/lexical';
import { createVectorIndex } from '../../src/infra/vectors';
import { prepareHybrid, type HybridOptions, type RetrievalMode } from '../../src/infra/vectors/hybrid';
import { systemClock } from '../../src/lib/clock';
import { registerAgent, startSvc } from '../harness';
import { files } from './blob-files';
import { buildCorpus, type Query } from './corpus';
import { firstRelevant, meanNdcg, pct, plainBm25, table, type Ranked } from './measure';

const DOCS = Number(process.env.DOCS ?? 2000);
const { docs, queries } = buildCorpus(DOCS);

const norm = (s: string) => s.replace(/\s+/g, ' ').toLowerCase();

async function main() {
  const s = await startSvc({ SVC_EMBEDDINGS: 'local', SVC_MEMORY_INDEX_INTERVAL_MS: '20', SVC_METERING_ENABLED: 'false' });
  try {
    const agent = await registerAgent(s.url, 'retrieval-blobs');
    const db = s.svc.database.db;
    // A tier whose parse rate and blob storage fit the collection.
    await db.updateTable('agents').set({ tier: 'deploy' }).where('agent_id', '=', agent.agentId).execute();
    const auth = { authorization: `Bearer ${agent.apiKey}` };
    const t0 = performance.now();
    const made = await files(docs);
    let bytes = 0;
    for (const [name, type, body] of made) {
      bytes += body.length;
      const form = new FormData();
      form.append('file', new Blob([body], { type }), name);
      const up = await fetch(`${s.url}/v1/blobs`, { method: 'PUT', headers: auth, body: form });
      const id = ((await up.json()) as { blob_id?: string }).blob_id;
      if (!id) throw new Error(`upload ${name}: ${up.status}`);
      const p = await fetch(`${s.url}/v1/blobs/${id}/parse`, { method: 'POST', headers: auth });
      const parsed = (await p.json()) as { status?: string };
      if (parsed.status !== 'complete') throw new Error(`parse ${name}: ${p.status} ${JSON.stringify(parsed).slice(0, 300)}`);
    }
    const parsedS = (performance.now() - t0) / 1000;
    const pendingNow = async () => Number((await db.selectFrom('vector_outbox').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    while ((await pendingNow()) > 0) await new Promise((r) => setTimeout(r, 250));
    const indexedS = (performance.now() - t0) / 1000;
    const chunkRows = await db.selectFrom('blob_chunks').select(['blob_id', 'chunk_index', 'text']).where('agent_id', '=', agent.agentId).orderBy('blob_id').orderBy('chunk_index').execute();
    const chunkIds = chunkRows.map((c) => `${c.blob_id}:${c.chunk_index}`);
    const chunkText = new Map(chunkRows.map((c, i) => [chunkIds[i]!, norm(c.text)]));
    console.error(`${made.length} files (${(bytes / 1e6).toFixed(1)} MB) of ${docs.length} documents → ${chunkRows.length} chunks: uploaded and parsed in ${parsedS.toFixed(1)} s, searchable by meaning after ${indexedS.toFixed(1)} s`);

    const byKey = new Map(docs.map((d) => [d.key, d]));
    const answers = (q: Query) => {
      const marks = byKey.get(q.relevant)!.marks.map(norm);
      return (id: string) => marks.some((m) => chunkText.get(id)?.includes(m));
    };
    const unanswerable = queries.filter((q) => !chunkIds.some(answers(q))).length;

    const bm25 = plainBm25(chunkRows.map((c) => c.text));
    const embedder = createEmbedder({ ...s.config.vectors, embeddingsThreads: 1 })!;
    const deps = { db, embedder, index: await createVectorIndex(s.svc.database, systemClock), lexical: createLexicalIndex(s.svc.database) };
    const inProcess: [string, RetrievalMode, HybridOptions][] = [
      ['svc lexical half', 'lexical', {}], ['svc vector half', 'vector', {}],
      ['noisy OR, lexical weight 0.4', 'hybrid', { lexicalWeight: 0.4 }], ['noisy OR, lexical weight 0.6', 'hybrid', { lexicalWeight: 0.6 }],
      ['reciprocal rank fusion (k 60)', 'hybrid', { fusion: 'rrf' }],
    ];
    const modes = ['plain BM25', 'svc hybrid (route)', ...inProcess.map(([m]) => m)];
    const ranks: Record<string, Ranked<Query['kind']>[]> = Object.fromEntries(modes.map((m) => [m, []]));
    let atDefault = 0;
    let atHalf = 0;
    const latencies: number[] = [];
    for (const q of queries) {
      const rel = answers(q);
      ranks['plain BM25']!.push({ kind: q.kind, rank: firstRelevant(bm25(q.q, 20).map((i) => chunkIds[i]!), rel) });
      const started = performance.now();
      const res = await fetch(`${s.url}/v1/blobs/search?q=${encodeURIComponent(q.q.slice(0, 500))}&threshold=0&limit=20`, { headers: auth });
      latencies.push(performance.now() - started);
      const body = (await res.json()) as { results?: { blob_id: string; chunk_index: number; similarity: number }[] };
      if (!body.results) throw new Error(`search: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      const ids = body.results.map((r) => `${r.blob_id}:${r.chunk_index}`);
      ranks['svc hybrid (route)']!.push({ kind: q.kind, rank: firstRelevant(ids, rel) });
      if (body.results.some((r, i) => rel(ids[i]!) && r.similarity >= 0.7)) atDefault++;
      if (body.results.some((r, i) => rel(ids[i]!) && r.similarity >= 0.5)) atHalf++;
      for (const [name, mode, options] of inProcess) {
        const { ranked } = await prepareHybrid(deps, 'blob_chunks', agent.agentId, q.q.slice(0, 500), mode, options);
        ranks[name]!.push({ kind: q.kind, rank: firstRelevant((await ranked(20)).map((h) => h.itemId), rel) });
      }
    }
    await embedder.close();
    const nd = (m: string) => meanNdcg(ranks[m]!);
    console.log(`blob search: ${made.length} files, ${docs.length} documents, ${chunkRows.length} chunks, ${queries.length} questions (${unanswerable} with no answering chunk); nDCG@10 / Recall@20 over chunks`);
    console.log(table(ranks, ['paraphrase', 'exact', 'reworded']).join('\n'));
    console.log(`svc hybrid ÷ plain BM25 nDCG@10: ${(nd('svc hybrid (route)') / nd('plain BM25')).toFixed(3)}×; ÷ svc lexical: ${(nd('svc hybrid (route)') / nd('svc lexical half')).toFixed(3)}×; RRF ÷ plain BM25: ${(nd('reciprocal rank fusion (k 60)') / nd('plain BM25')).toFixed(3)}×`);
    console.log(`answering chunk returned at threshold 0.7: ${(100 * atDefault / queries.length).toFixed(1)} %; at 0.5 (blob search's default): ${(100 * atHalf / queries.length).toFixed(1)} %`);
    console.log(`blob search route latency over ${chunkRows.length} chunks: p50 ${pct(latencies, 0.5).toFixed(1)} ms, p95 ${pct(latencies, 0.95).toFixed(1)} ms`);
  } finally {
    await s.close();
  }
}

void main();
