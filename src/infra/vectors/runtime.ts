/**
 * The semantic-search runtime built once by app.ts and shared by memory, commons and blob search:
 * the configured embedder (undefined with SVC_EMBEDDINGS=none), the vector index of this engine,
 * and one background indexer draining the outbox. Modules register their text sources on it.
 */
import type { Config } from '../../config';
import type { Clock } from '../../lib/clock';
import type { DatabaseHandle } from '../db/database';
import { createEmbedder, type Embedder } from '../embeddings';
import { createVectorIndex } from '.';
import { createVectorIndexer, type VectorIndexer } from './indexer';
import type { VectorIndex } from './types';
import { createLexicalIndex, type LexicalIndex } from '../lexical';

export interface VectorRuntime {
  embedder?: Embedder;
  index: VectorIndex;
  /** The lexical (BM25) index, written in each item's own transaction. */
  lexical: LexicalIndex;
  /** SVC_SEARCH_EMBED_WAIT_MS: how long a search waits for its owner's newest pending items. */
  catchUpMs: number;
  /** Absent without an embedder: nothing is queued, nothing is searched. */
  indexer?: VectorIndexer;
  close(): Promise<void>;
}

export async function createVectorRuntime(opts: {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  /** Overrides the configured embedder (benchmarks). */
  embedder?: Embedder;
  log?: (msg: string, err?: unknown) => void;
}): Promise<VectorRuntime> {
  const { config, database, clock } = opts;
  const embedder = opts.embedder ?? createEmbedder(config.vectors);
  const index = await createVectorIndex(database, clock, {
    residentBytes: config.vectors.vectorResidentMb * 2 ** 20, onFallback: (why) => opts.log?.(`vector index: ${why}`),
  });
  const indexer = embedder
    ? createVectorIndexer({
        db: database.db, sqlite: database.sqlite, index, embedder, clock, batchSize: config.vectors.embeddingsBatchSize,
        intervalMs: config.memory.memoryIndexIntervalMs, log: opts.log, parallel: config.vectors.embeddingsThreads,
      })
    : undefined;
  return {
    embedder, index, indexer, lexical: createLexicalIndex(database), catchUpMs: config.memory.searchEmbedWaitMs,
    async close() {
      await indexer?.stop();
      await embedder?.close();
    },
  };
}
