/**
 * Hybrid retrieval shared by memory, commons and blob search: the lexical index (BM25, written in
 * the item's own transaction) and the vector index (filled by the indexer), fused into one ranked
 * list with one similarity in 0..1. Design, calibration and measurements: docs/memory.md, "Hybrid
 * search".
 *
 * A search never waits on the embedding backlog: it embeds the query and, when the owner has at most
 * CATCH_UP_BACKLOG pending items, the CATCH_UP_ITEMS newest of them (writes made just before it) at
 * query priority within CATCH_UP_BUDGET_MS (read-your-writes by meaning when the backlog is small).
 * A larger backlog (a bulk load) is left to the background loop: those items are found by their
 * words at once, and `pending` tells the caller how many are not yet searchable by meaning.
 *
 * Fusion (per item; a long item's vector score is its best chunk's):
 *   v = (1 + cosine) / 2                      the vector half, 0..1 (0.5 when the item has no vector yet)
 *   m = BM25 ÷ Σ IDF(query terms), ≤ 1        the lexical half, 0..1 (0 when no query word matches)
 *   similarity = 1 − (1 − v)·(1 − LEXICAL_WEIGHT·m)
 * a "noisy OR": either half alone can carry a hit, both together rank it higher. Ranked by it.
 */
import { allChunkIds, itemOfChunk, type Embedder } from '../embeddings';
import type { LexicalIndex } from '../lexical';
import type { VectorIndexer } from './indexer';
import { readFloats, type VectorIndex } from './types';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema';

/** Pending items of the searcher embedded before answering, at most, and the time allowed for it. */
export const CATCH_UP_ITEMS = 8;
export const CATCH_UP_BUDGET_MS = 150;
/**
 * Past this many pending items of the searcher (a bulk load being embedded) a search does not catch
 * up at all: the newest few would not make it complete by meaning, and waiting for them behind the
 * load's batches is what made such searches slow. Below it the background loop drains them within
 * about a second anyway; the search embeds the newest few itself so a write just made is found at once.
 */
export const CATCH_UP_BACKLOG = 100;
/**
 * Weight of the lexical half in the fusion. Measured on the judged collection of bench/retrieval
 * (nDCG@10 of memory and blob search at 430 and 2,130 documents, the same candidates fused): 0.8 is
 * 1–3 % above 0.6 in each of the four runs, 0.4 below both; docs/memory.md.
 */
export const LEXICAL_WEIGHT = 0.8;

export type RetrievalMode = 'hybrid' | 'lexical' | 'vector';

/** Candidates each half gives at least (4 per result wanted when more, at most 500). */
const MIN_DEPTH = 50;

/**
 * How the two halves are combined: `noisy-or` (svc's, above) or `rrf`, reciprocal rank fusion
 * (Σ 1 / (RRF_K + rank) over the lexical and the vector ranking, scaled by its maximum to 0..1),
 * kept so bench/retrieval can measure both on the same candidates.
 */
export type Fusion = 'noisy-or' | 'rrf';
export const RRF_K = 60;

export interface HybridOptions {
  fusion?: Fusion;
  /** Weight of the lexical half in the noisy OR (LEXICAL_WEIGHT). */
  lexicalWeight?: number;
}

export interface HybridHit {
  itemId: string;
  similarity: number;
  /** Best chunk's cosine; undefined when the item has no vector (yet). */
  cosine?: number;
  /** Lexical half, 0..1. */
  match: number;
}

export interface HybridDeps {
  db: Kysely<Database>;
  embedder?: Embedder;
  index?: VectorIndex;
  indexer?: Pick<VectorIndexer, 'catchUp' | 'pending'>;
  lexical: LexicalIndex;
  /** Time a search waits for its owner's newest pending items after its query is embedded (SVC_SEARCH_EMBED_WAIT_MS). */
  catchUpMs?: number;
}

export const vectorHalf = (cosine: number | undefined) => (cosine === undefined ? 0.5 : Math.min(1, Math.max(0, (1 + cosine) / 2)));
export const fuse = (cosine: number | undefined, match: number, weight = LEXICAL_WEIGHT) => 1 - (1 - vectorHalf(cosine)) * (1 - weight * match);

/**
 * Prepares one search: the query's vector and the catch-up run together. Returns how many items of
 * the owner are still pending, and a ranker giving the best `k` items (ask again with a larger k
 * when filters drop some).
 */
export async function prepareHybrid(deps: HybridDeps, collection: string, ownerId: string, query: string, mode: RetrievalMode = 'hybrid', options: HybridOptions = {}) {
  const weight = options.lexicalWeight ?? LEXICAL_WEIGHT;
  const { embedder, index, indexer, lexical } = deps;
  const useVectors = mode !== 'lexical' && embedder && index;
  const queryVector = useVectors ? embedder.embed([query], { priority: 'query' }).then((v) => v[0]!) : Promise.resolve(undefined);
  queryVector.catch(() => undefined); // awaited below; a failure must not surface as unhandled meanwhile
  // The lexical half at the usual depth, read while the query is embedded in its thread.
  const firstWords = mode === 'vector' ? undefined : lexical.query(collection, ownerId, query, MIN_DEPTH);
  firstWords?.catch(() => undefined);
  let pending = useVectors && indexer ? await indexer.pending(collection, ownerId) : 0;
  // A small backlog (writes just before this search): its newest items embedded now, waited for
  // within the budget. A bulk load is left to the background loop; the answer says how much is not
  // yet searchable by meaning.
  const catchUp = pending > 0 && pending <= CATCH_UP_BACKLOG && indexer;
  const [vector] = await Promise.all([
    queryVector,
    catchUp ? indexer.catchUp(collection, ownerId, CATCH_UP_ITEMS, deps.catchUpMs ?? CATCH_UP_BUDGET_MS, queryVector).catch(() => undefined) : undefined,
  ]);
  if (catchUp) pending = await indexer.pending(collection, ownerId);

  async function ranked(k: number): Promise<HybridHit[]> {
    const depth = Math.min(500, Math.max(MIN_DEPTH, k * 4));
    const [lex, near] = await Promise.all([
      mode === 'vector' ? Promise.resolve([]) : depth === MIN_DEPTH && firstWords ? firstWords : lexical.query(collection, ownerId, query, depth),
      vector && index ? index.query({ collection, ownerId, modelId: embedder!.modelId, vector, limit: depth * 2 }) : Promise.resolve([]),
    ]);
    const cos = new Map<string, number>();
    for (const h of near) {
      const item = itemOfChunk(h.itemId);
      if (!cos.has(item) || cos.get(item)! < h.cosine) cos.set(item, h.cosine);
    }
    const match = new Map(lex.map((h) => [h.itemId, h.match]));
    // Lexical hits the vector list did not reach: their exact cosine from their stored vectors.
    if (vector && mode === 'hybrid') {
      const missing = lex.map((h) => h.itemId).filter((id) => !cos.has(id));
      for (const [item, c] of await cosinesOf(deps.db, collection, ownerId, embedder!.modelId, vector, missing)) cos.set(item, c);
    }
    const items = new Set<string>([...(mode === 'lexical' ? [] : cos.keys()), ...match.keys()]);
    const hits: HybridHit[] = [];
    const rrf = mode === 'hybrid' && options.fusion === 'rrf' ? reciprocalRanks(items, cos, match) : undefined;
    for (const itemId of items) {
      const c = cos.get(itemId);
      const m = match.get(itemId) ?? 0;
      const similarity = mode === 'lexical' ? m : mode === 'vector' ? vectorHalf(c) : rrf ? rrf.get(itemId)! : fuse(c, m, weight);
      hits.push({ itemId, similarity, cosine: c, match: m });
    }
    hits.sort((a, b) => b.similarity - a.similarity || (a.itemId < b.itemId ? -1 : 1));
    return hits.slice(0, k);
  }
  return { pending, ranked };
}

/** Reciprocal rank fusion of the two rankings over the same candidates, scaled to 0..1. */
function reciprocalRanks(items: Set<string>, cos: Map<string, number>, match: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>([...items].map((i) => [i, 0]));
  const add = (ranked: [string, number][]) => {
    ranked.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    ranked.forEach(([i], r) => out.set(i, out.get(i)! + 1 / (RRF_K + r + 1)));
  };
  add([...cos.entries()]);
  add([...match.entries()].filter(([, m]) => m > 0));
  const max = 2 / (RRF_K + 1);
  for (const [i, s] of out) out.set(i, s / max);
  return out;
}

/** Best-chunk cosine of the given items from their stored vectors (items without one are absent). */
async function cosinesOf(db: Kysely<Database>, collection: string, ownerId: string, modelId: string, q: Float32Array, items: string[]) {
  const out = new Map<string, number>();
  if (items.length === 0) return out;
  // The model is checked here, not in SQL: with it there SQLite's planner may take the
  // (collection, owner, model) index and read every vector of the owner instead of these items'.
  const rows = await db.selectFrom('vector_items').select(['item_id', 'model_id', 'embedding'])
    .where('collection', '=', collection).where('owner_id', '=', ownerId)
    .where('item_id', 'in', items.flatMap(allChunkIds)).execute();
  for (const r of rows) {
    if (r.model_id !== modelId) continue;
    const v = readFloats(r.embedding);
    if (v.length !== q.length) continue;
    let dot = 0;
    for (let i = 0; i < v.length; i++) dot += v[i]! * q[i]!;
    const item = itemOfChunk(r.item_id);
    if (!out.has(item) || out.get(item)! < dot) out.set(item, dot);
  }
  return out;
}
