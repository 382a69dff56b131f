/** What every embeddings adapter offers; see docs/embeddings.md. */
export interface Embedder {
  /** Stored with every vector, e.g. 'use-lite-512@energetic-ai-0.2.0' or 'openai:text-embedding-3-small'. */
  readonly modelId: string;
  readonly dimensions: number;
  /**
   * Words per chunk of a long text (the indexer embeds a long item as several overlapping chunks):
   * about what the model reads. Default 300.
   */
  readonly chunkWords?: number;
  /** L2-normalised vectors, one per text, in input order. Throws EmbeddingError. */
  embed(texts: string[], opts?: EmbedOptions): Promise<Float32Array[]>;
  /** Releases the worker thread / connections. Pending calls are rejected. */
  close(): Promise<void>;
  /**
   * A model run in this process: `cold` (not loaded: it loads on the first text to embed), `loading`
   * (its thread is starting and reading the weights), `ready`. Absent for a remote embedder.
   */
  warmth?(): EmbedderWarmth;
}

export type EmbedderWarmth = 'cold' | 'loading' | 'ready';

export interface EmbedOptions {
  /**
   * `query`: a search is waiting (a query, or the few newest pending items of the searcher): goes
   * ahead of queued background work. `bulk` (default): background indexing.
   */
  priority?: 'query' | 'bulk';
}

/**
 * The one error of this adapter. The module routes map it to 503 MEMORY_SEARCH_UNAVAILABLE or
 * BLOB_SEARCH_UNAVAILABLE; `reason` says what went wrong for logs, never for the agent.
 */
export class EmbeddingError extends Error {
  readonly code = 'EMBEDDINGS_UNAVAILABLE';
  constructor(
    message: string,
    readonly reason: EmbeddingFailure,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'EmbeddingError';
  }
}

export type EmbeddingFailure =
  | 'closed' // embed() after close()
  | 'timeout' // no answer within the configured time
  | 'worker_crashed' // the local model's thread died; the next call starts a new one
  | 'model_load_failed'
  | 'model_error' // the local model threw on a batch; the thread is still usable
  | 'input_rejected' // remote refused the inputs as invalid (400, 413, 422), e.g. a text over the model's token limit
  | 'upstream_status' // remote answered another non-2xx (after the retries of 408/409/5xx)
  | 'rate_limited' // remote answered 429 (after the retries, or its retry-after passes the time limit)
  | 'upstream_auth' // remote answered 401/403
  | 'bad_response' // remote body was not the OpenAI shape, or wrong count/length; the local thread's answer of the wrong length
  | 'network'; // connection refused, reset, DNS

/**
 * True when the texts, not the model's availability, are to blame: the server refused them as
 * invalid, or the local model threw on them. Sending the same texts again fails again, so the vector
 * indexer isolates the refused text instead of retrying its whole batch (src/infra/vectors/indexer.ts).
 */
export function blamesInput(err: unknown): boolean {
  return err instanceof EmbeddingError && (err.reason === 'input_rejected' || err.reason === 'model_error');
}

/** Scales a vector to length 1 in place (a zero vector stays zero). Returns it. */
export function normaliseInPlace(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] /= norm;
  return v;
}

/** Cosine similarity; for normalised vectors this is the dot product. */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
