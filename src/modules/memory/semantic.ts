/**
 * Semantic memory search: the MemorySemantic port over the shared vector index and embedder.
 *
 * What is embedded: `textForEmbedding(key, value)` (src/infra/embeddings/text.ts) — the key split
 * into words, then the value's text content (strings, `name: value` pairs, array items), cut at
 * 1,000 characters. Reported similarity = (1 + cosine) / 2, the linear map of cosine's -1..1 onto
 * the API's 0..1 (so the default threshold 0.7 means cosine >= 0.4). See docs/memory.md.
 */
import type { Embedder } from '../../infra/embeddings';
import { textForEmbedding } from '../../infra/embeddings';
import type { VectorIndex, VectorIndexer } from '../../infra/vectors';
import type { Clock } from '../../lib/clock';
import type { MemorySemantic } from './ports';
import type { MemoryStore } from './store';

export const MEMORY_COLLECTION = 'memory';

export const similarityOf = (cosine: number) => Math.min(1, Math.max(0, (1 + cosine) / 2));

/** The indexer's text source for memory items. */
export function memoryTextSource(store: MemoryStore, clock: Clock) {
  return async (agentId: string, keys: string[]) => {
    const rows = await store.liveValues(agentId, keys, clock.now());
    const out = new Map<string, { text: string; version: number }>();
    for (const [key, r] of rows) out.set(key, { text: textForEmbedding(key, JSON.parse(r.value)), version: r.version });
    return out;
  };
}

export function createMemorySemantic(deps: { embedder?: Embedder; index?: VectorIndex; indexer?: VectorIndexer }): MemorySemantic {
  const { embedder, index, indexer } = deps;
  return {
    unavailableReason() {
      if (!embedder) return 'no embeddings provider is configured (SVC_EMBEDDINGS=none)';
      if (!index || !indexer) return 'no vector index';
      return undefined;
    },
    async enqueue(trx, agentId, key) {
      await indexer?.enqueue(trx, MEMORY_COLLECTION, agentId, [key]);
    },
    async forget(trx, agentId, keys) {
      await indexer?.forget(trx, MEMORY_COLLECTION, agentId, keys);
    },
    async nearest(agentId, query) {
      // The query's embedding and the agent's pending items go to the model together (one batch when they fit).
      const [, [vector]] = await Promise.all([indexer!.drain(MEMORY_COLLECTION, agentId), embedder!.embed([query])]);
      return async (k) => {
        const hits = await index!.query({ collection: MEMORY_COLLECTION, ownerId: agentId, modelId: embedder!.modelId, vector, limit: k });
        return hits.map((h) => ({ key: h.itemId, similarity: similarityOf(h.cosine) }));
      };
    },
  };
}
