/**
 * Search chunks of parsed blobs: the latest complete parse of a blob replaces its chunks
 * (blob_chunks) and, in the same transaction, queues them for embedding in the shared vector
 * outbox (collection `blob_chunks`, owner = agent, item = "<blob_id>:<chunk_index>"). The shared
 * indexer embeds them in the background; a search drains the agent's pending ones first.
 * Deleting the blob drops its chunks and vectors.
 */
import type { VectorIndexer } from '../../infra/vectors';
import type { LexicalIndex } from '../../infra/lexical';
import type { ParseResult } from '../../infra/parsers';
import type { ParseStore, Trx } from './store';

export const BLOB_CHUNK_COLLECTION = 'blob_chunks';
/**
 * A chunk (~1,000 characters) is embedded as windows of whole sentences and lines of at most this
 * many words, each its own vector (its best one counts): a parsed chunk packs several table rows or
 * short sections, and one vector of all of them matched none well (bench/retrieval/blob-hybrid.ts:
 * the vector half's nDCG@10 0.23 with 90-word windows, 0.35 with these, at 430 documents).
 */
export const BLOB_WINDOW_WORDS = 25;

export type ChunkIndexer = Pick<VectorIndexer, 'enqueue' | 'forget' | 'drain' | 'addSource' | 'catchUp' | 'pending'>;

export const chunkItemId = (blobId: string, index: number) => `${blobId}:${index}`;

export function parseItemId(itemId: string): { blobId: string; index: number } | undefined {
  const m = /^(b_[0-9a-f]{16}):(\d+)$/.exec(itemId);
  return m ? { blobId: m[1]!, index: Number(m[2]) } : undefined;
}

/** The indexer's text source: chunk text, versioned by when the chunk was stored. */
export function chunkTextSource(store: ParseStore) {
  return async (agentId: string, itemIds: string[]) => {
    const keys = itemIds.map(parseItemId).filter((k): k is { blobId: string; index: number } => !!k);
    const rows = await store.chunks(agentId, keys);
    const out = new Map<string, { text: string; version: number }>();
    for (const r of rows) out.set(chunkItemId(r.blob_id, Number(r.chunk_index)), { text: r.text, version: Number(r.created_at) });
    return out;
  };
}

export async function storeChunks(
  trx: Trx, store: ParseStore, indexer: ChunkIndexer | undefined,
  at: { agentId: string; blobId: string; parseId: string; now: number }, result: Pick<ParseResult, 'chunks'>, lexical?: LexicalIndex,
): Promise<void> {
  const chunks = result.chunks.filter((c) => c.text.trim().length > 0);
  const { gone, kept } = await store.replaceChunks(trx, at.agentId, at.blobId, at.parseId, chunks, at.now);
  // None kept when the blob was deleted meanwhile.
  const live = (kept > 0 ? chunks : []).map((c) => ({ itemId: chunkItemId(at.blobId, c.index), text: c.text }));
  let toEmbed = live.map((c) => c.itemId);
  if (lexical) {
    // The chunks' words are searchable as soon as the parse commits.
    await lexical.remove(trx, BLOB_CHUNK_COLLECTION, at.agentId, gone.map((i) => chunkItemId(at.blobId, i)));
    // A chunk whose text is the one indexed at its place (a blob parsed again) keeps its vectors,
    // made or queued, as a memory written again with the same text does.
    toEmbed = [];
    for (const c of live) if (await lexical.put(trx, BLOB_CHUNK_COLLECTION, at.agentId, c.itemId, c.text)) toEmbed.push(c.itemId);
  }
  if (!indexer) return;
  await indexer.forget(trx, BLOB_CHUNK_COLLECTION, at.agentId, gone.map((i) => chunkItemId(at.blobId, i)));
  await indexer.enqueue(trx, BLOB_CHUNK_COLLECTION, at.agentId, toEmbed);
}

export async function dropChunks(store: ParseStore, indexer: ChunkIndexer | undefined, agentId: string, blobId: string, lexical?: LexicalIndex): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    const gone = await store.deleteChunks(trx, agentId, blobId);
    await lexical?.remove(trx, BLOB_CHUNK_COLLECTION, agentId, gone.map((i) => chunkItemId(blobId, i)));
    await indexer?.forget(trx, BLOB_CHUNK_COLLECTION, agentId, gone.map((i) => chunkItemId(blobId, i)));
  });
}
