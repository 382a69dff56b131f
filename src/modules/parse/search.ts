/**
 * GET /v1/blobs/search: hybrid search (src/infra/vectors/hybrid.ts: BM25 over the chunks' words
 * fused with the shared embedder's vectors, one similarity in 0..1 on the same scale as memory
 * search) over the chunks of the agent's parsed blobs. Each chunk is embedded as windows of whole
 * sentences and lines (chunks.ts, BLOB_WINDOW_WORDS); its best window counts. Order: q present (422
 * BLOB_QUERY_REQUIRED) → embeddings and index configured (503 BLOB_SEARCH_UNAVAILABLE) → one call
 * in the search pool (429 SEARCH_CALLS_LIMIT / 402 INSUFFICIENT_CREDITS, before any embedding
 * work) → embed the query (and the agent's newest pending chunks within the search's wait), rank →
 * keep those at or above `threshold`. Bounds: q 1 to 500 characters; limit 1 to 20 (default 5);
 * threshold 0 to 1 (default 0.5). Measured: bench/retrieval/blob-hybrid.ts.
 */
import { ApiError } from '../../http/errors';
import type { Embedder } from '../../infra/embeddings';
import type { VectorIndex } from '../../infra/vectors';
import type { LexicalIndex } from '../../infra/lexical';
import { prepareHybrid } from '../../infra/vectors/hybrid';
import type { Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { newId } from '../../lib/ids';
import { BLOB_CHUNK_COLLECTION, parseItemId, type ChunkIndexer } from './chunks';
import type { BlobsPort, Caller, ParseMeter, SearchUsageReader } from './ports';
import type { ParseStore } from './store';
import { trimBlank } from '../../lib/text';
import type { ChunkLocation } from '../../infra/parsers';

export const BLOB_SEARCH_DEFAULTS = { limit: 5, threshold: 0.5 } as const;
const SNIPPET_CHARS = 500;

export const similarityOf = (cosine: number) => Math.min(1, Math.max(0, (1 + cosine) / 2));

export interface BlobSearchDeps {
  store: ParseStore;
  blobs: BlobsPort;
  embedder?: Embedder;
  index?: VectorIndex;
  indexer?: ChunkIndexer;
  lexical: LexicalIndex;
  db: Kysely<Database>;
  catchUpMs?: number;
  meter?: ParseMeter;
  usage?: SearchUsageReader;
  baseUrl: string;
  log?: (msg: string, err: unknown) => void;
}

const balanceUnitsOf = (usd: string): number | undefined => {
  const m = /^(-?)(\d+)\.(\d{4})$/.exec(usd);
  return m ? (m[1] ? -1 : 1) * (Number(m[2]) * 10_000 + Number(m[3])) : undefined;
};

function snippetOf(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length <= SNIPPET_CHARS ? t : `${t.slice(0, SNIPPET_CHARS - 1)}…`;
}

export function createBlobSearch(deps: BlobSearchDeps) {
  const { embedder, index, indexer } = deps;
  return {
    unavailableReason(): string | undefined {
      if (!embedder) return 'no embeddings provider is configured (SVC_EMBEDDINGS=none)';
      if (!index || !indexer) return 'no vector index';
      return undefined;
    },

    async search(caller: Caller, q: string, limit: number, threshold: number) {
      const text = trimBlank(q);
      if (!text) throw new ApiError(422, 'BLOB_QUERY_REQUIRED', 'q is required: 1 to 500 characters, not only whitespace', { field: 'querystring.q' });
      const why = this.unavailableReason();
      if (why) throw new ApiError(503, 'BLOB_SEARCH_UNAVAILABLE', `Blob search is not available on this host: ${why}`);
      const charge = await deps.meter?.charge(caller.agentId, 'blob_search', { tier: caller.tier });
      let hits;
      let pending = 0;
      try {
        const prepared = await prepareHybrid({ db: deps.db, embedder, index, indexer, lexical: deps.lexical, catchUpMs: deps.catchUpMs }, BLOB_CHUNK_COLLECTION, caller.agentId, text);
        pending = prepared.pending;
        hits = await prepared.ranked(limit);
      } catch (e) {
        await charge?.refund();
        deps.log?.('blob search failed', e);
        throw new ApiError(503, 'BLOB_SEARCH_UNAVAILABLE', 'Blob search failed upstream (embeddings or vector index); try again later');
      }
      const kept = hits.map((h) => ({ key: parseItemId(h.itemId), similarity: h.similarity }))
        .filter((h): h is { key: { blobId: string; index: number }; similarity: number } => !!h.key && h.similarity >= threshold);
      const chunks = new Map((await deps.store.chunks(caller.agentId, kept.map((h) => h.key))).map((c) => [`${c.blob_id}:${c.chunk_index}`, c]));
      const blobs = new Map<string, Awaited<ReturnType<BlobsPort['find']>> | null>();
      for (const id of new Set(kept.map((h) => h.key.blobId))) {
        blobs.set(id, await deps.blobs.find(caller.agentId, id).catch(() => null));
      }
      const results = [];
      for (const h of kept) {
        const c = chunks.get(`${h.key.blobId}:${h.key.index}`);
        const blob = blobs.get(h.key.blobId);
        if (!c || !blob) continue; // deleted meanwhile
        const location = JSON.parse(c.location) as ChunkLocation;
        const where = location.page ? ` (page ${location.page})` : location.sheet ? ` (sheet ${location.sheet})` : '';
        results.push({
          title: `${blob.filename ?? blob.blob_id}${where}`,
          url: `${deps.baseUrl}/v1/blobs/${blob.blob_id}`,
          snippet: snippetOf(c.text),
          source: 'blob' as const,
          credibility_score: 0.5,
          published_date: null,
          similarity: Math.round(h.similarity * 10_000) / 10_000,
          blob_id: blob.blob_id,
          parse_id: c.parse_id,
          chunk_index: Number(c.chunk_index),
          location,
          content_type: blob.content_type,
          content_trust: 'untrusted_data' as const,
        });
      }
      const usage = deps.usage && charge
        ? await deps.usage.searchUsage(caller.agentId, caller.tier, {
          balanceUnits: balanceUnitsOf(charge.usage.credits_remaining_usd), tierName: charge.tier, counts: charge.poolCounts,
        })
        : null;
      return { search_id: newId(), query: text, results, usage, svcUsage: charge?.usage ?? null, pending_embeddings: pending };
    },
  };
}

export type BlobSearch = ReturnType<typeof createBlobSearch>;
