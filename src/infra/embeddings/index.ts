/**
 * Embeddings adapter: turns text into L2-normalised vectors for semantic memory and blob search.
 * Implementations: LocalEmbedder (USE lite in a worker thread, default, offline) and OpenAiEmbedder
 * (any OpenAI-compatible /v1/embeddings). Every vector is stored with `modelId`; a different model id
 * means re-embedding, never mixing. Details and measurements: docs/embeddings.md.
 */
import { ConfigError } from '../../config/define';
import type { Config } from '../../config';
import { LocalEmbedder, LocalEmbedderPool } from './local';
import { KNOWN_DIMENSIONS, OpenAiEmbedder } from './openai';
import type { Embedder } from './types';

export { EmbeddingError, blamesInput, cosine, normaliseInPlace, type Embedder, type EmbedOptions, type EmbeddingFailure } from './types';
export { LocalEmbedder, LocalEmbedderPool, localModelId } from './local';
export { OpenAiEmbedder, embeddingsEndpoint } from './openai';
export { textForEmbedding, splitName, EMBED_TEXT_MAX_CHARS, chunkText, sentenceWindows, chunkId, itemOfChunk, allChunkIds, MAX_CHUNKS } from './text';

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com';

/**
 * The embedder the configuration asks for; undefined when SVC_EMBEDDINGS=none. Nothing starts here:
 * the local model loads on its first embed(). Throws ConfigError when the remote model's vector
 * length is unknown.
 */
export function createEmbedder(cfg: Config['vectors']): Embedder | undefined {
  switch (cfg.embeddings) {
    case 'none':
      return undefined;
    case 'local':
      return cfg.embeddingsThreads > 1
        ? new LocalEmbedderPool({
          batchSize: cfg.embeddingsBatchSize, timeoutMs: cfg.embeddingsTimeoutMs, threads: cfg.embeddingsThreads, backgroundNice: cfg.embeddingsBackgroundNice,
        })
        : new LocalEmbedder({ batchSize: cfg.embeddingsBatchSize, timeoutMs: cfg.embeddingsTimeoutMs });
    case 'openai': {
      const dimensions = cfg.embeddingsDimensions || KNOWN_DIMENSIONS[cfg.embeddingsModel];
      if (!dimensions) {
        throw new ConfigError([
          `SVC_EMBEDDINGS_DIMENSIONS must be set for SVC_EMBEDDINGS_MODEL "${cfg.embeddingsModel}" (the length of its vectors)`,
        ]);
      }
      return new OpenAiEmbedder({
        baseUrl: cfg.embeddingsUrl ?? DEFAULT_OPENAI_BASE_URL,
        apiKey: cfg.embeddingsApiKey,
        model: cfg.embeddingsModel,
        dimensions,
        timeoutMs: cfg.embeddingsTimeoutMs,
        batchSize: cfg.embeddingsBatchSize,
      });
    }
  }
}
