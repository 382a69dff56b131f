/**
 * Memory search: the MemorySemantic port over the shared lexical index, vector index and embedder
 * (hybrid retrieval, src/infra/vectors/hybrid.ts).
 *
 * What is indexed: `textForEmbedding(key, value)` (src/infra/embeddings/text.ts) — the key split
 * into words, then the value's text content (strings, `name: value` pairs, array items). The
 * lexical index takes all of it, in the PUT's own transaction (found by its words at once); the
 * indexer embeds it in overlapping chunks (a long value's first MAX_CHUNKS), and an entry's vector
 * score is its best chunk's. Similarity: hybrid.ts. See docs/memory.md.
 */
import type { Embedder } from '../../infra/embeddings';
import { textForEmbedding } from '../../infra/embeddings';
import type { LexicalIndex } from '../../infra/lexical';
import type { VectorIndex, VectorIndexer } from '../../infra/vectors';
import { prepareHybrid, type RetrievalMode } from '../../infra/vectors/hybrid';
import type { Clock } from '../../lib/clock';
import type { Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { MemorySemantic } from './ports';
import type { MemoryStore } from './store';

export const MEMORY_COLLECTION = 'memory';

/** Characters of a value's text given to the embedder (its chunks) and to the lexical index. */
export const EMBED_SOURCE_MAX_CHARS = 20_000;
export const LEXICAL_MAX_CHARS = 600_000;

export const similarityOf = (cosine: number) => Math.min(1, Math.max(0, (1 + cosine) / 2));

/** The indexer's text source for memory items. */
export function memoryTextSource(store: MemoryStore, clock: Clock) {
  return async (agentId: string, keys: string[]) => {
    const rows = await store.liveValues(agentId, keys, clock.now());
    const out = new Map<string, { text: string; version: number }>();
    for (const [key, r] of rows) out.set(key, { text: textForEmbedding(key, JSON.parse(r.value), EMBED_SOURCE_MAX_CHARS), version: r.version });
    return out;
  };
}

export function createMemorySemantic(deps: {
  db: Kysely<Database>; lexical: LexicalIndex; embedder?: Embedder; index?: VectorIndex; indexer?: VectorIndexer; mode?: RetrievalMode; catchUpMs?: number;
}): MemorySemantic {
  const { embedder, index, indexer, lexical } = deps;
  return {
    unavailableReason() {
      if (!embedder) return 'no embeddings provider is configured (SVC_EMBEDDINGS=none)';
      if (!index || !indexer) return 'no vector index';
      return undefined;
    },
    async indexWrite(trx, agentId, key, value, opts) {
      const changed = await lexical.put(trx, MEMORY_COLLECTION, agentId, key, textForEmbedding(key, value, LEXICAL_MAX_CHARS));
      // The same text as the indexed one (a value written again): its vectors, made or queued, stand
      // (the embedded text is a prefix of the indexed one).
      if (changed && !opts?.wordsOnly) await indexer?.enqueue(trx, MEMORY_COLLECTION, agentId, [key]);
    },
    async forget(trx, agentId, keys) {
      await lexical.remove(trx, MEMORY_COLLECTION, agentId, keys);
      await indexer?.forget(trx, MEMORY_COLLECTION, agentId, keys);
    },
    async nearest(agentId, query) {
      const { pending, ranked } = await prepareHybrid({ db: deps.db, embedder, index, indexer, lexical, catchUpMs: deps.catchUpMs }, MEMORY_COLLECTION, agentId, query, deps.mode);
      return {
        pending,
        ranked: async (k) => (await ranked(k)).map((h) => ({ key: h.itemId, similarity: h.similarity })),
      };
    },
  };
}

/**
 * Indexes the words of live entries that have no lexical row (entries written before the lexical
 * index existed), a batch at a time, each in its own transaction. Returns how many.
 */
export async function backfillLexical(store: MemoryStore, semantic: Pick<MemorySemantic, 'indexWrite'>, clock: Clock, batch = 500) {
  let total = 0;
  for (;;) {
    // Read in the writing transaction: a PUT that commits first is not overwritten with an older text.
    const rows = await store.db.transaction().execute(async (trx) => {
      const found = await store.entriesWithoutLexical(clock.now(), batch, trx);
      for (const r of found) await semantic.indexWrite(trx, r.agent_id, r.key, JSON.parse(r.value), { wordsOnly: true });
      return found;
    });
    if (rows.length === 0) return total;
    total += rows.length;
    if (rows.length < batch) return total;
  }
}
