/**
 * Remote embedder for any OpenAI-compatible `POST {base}/v1/embeddings` (OpenAI, Ollama, vLLM, TEI).
 * Wire format (OpenAI API reference, "Create embeddings"): request `{ model, input: string[] }`,
 * response `{ object: 'list', data: [{ object: 'embedding', embedding: number[], index }], model, usage }`.
 * The response is checked strictly (one vector per input, each of the configured length, every index
 * once) because a wrong vector stored silently poisons search; vectors are re-normalised since not
 * every server returns unit vectors.
 *
 * Requests respect OpenAI's documented input limits: an input is never an empty string (sent as one
 * space, as the local model does), and inputs above `batchSize` (at most 2048) or above 300,000
 * tokens summed are sent as several requests in turn. Tokens are bounded by UTF-8 bytes (a token of
 * a byte-level BPE covers at least one byte), so a request carries at most 300,000 bytes of text.
 *
 * 408, 409, 429 and 5xx answers, and a connection dropped under the request (ECONNRESET, EPIPE, closed
 * by the server), are retried (at most `maxRetries` times, default 2, like OpenAI's own SDKs), after
 * the server's `retry-after-ms` / `retry-after` wait when it sends one, else a short exponential
 * backoff; all attempts and waits of one request share the `timeoutMs` budget, and a wait that would
 * pass it fails at once instead of sleeping. 400, 413 and 422 refuse the inputs (`input_rejected`).
 * The address is set by the operator, not by agents, so this does not use the SSRF-guarded client.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { retryAfterSeconds } from '../../lib/retry-after';
import { EmbeddingError, normaliseInPlace, type Embedder, type EmbeddingFailure } from './types';

export interface OpenAiEmbedderOptions {
  /** e.g. https://api.openai.com or http://127.0.0.1:11434 (a trailing /v1 is accepted). */
  baseUrl: string;
  apiKey?: string;
  model: string;
  dimensions: number;
  /** Limit for one request to the server, retries and their waits included. */
  timeoutMs: number;
  batchSize: number;
  /** Retries after a 408/409/429/5xx answer or a dropped connection (default 2). */
  maxRetries?: number;
  /** First backoff when the server names no wait (default 500 ms; doubles, with jitter). */
  retryBaseMs?: number;
}

/** OpenAI: "any array must be 2048 dimensions or less" (inputs per request). */
export const MAX_INPUTS_PER_REQUEST = 2048;
/** OpenAI: "a maximum of 300,000 tokens summed across all inputs in a single request"; counted as UTF-8 bytes. */
export const MAX_REQUEST_BYTES = 300_000;
const DEFAULT_MAX_RETRIES = 2;
const DEFAULT_RETRY_BASE_MS = 500;

/** Native output lengths of well-known models, used when SVC_EMBEDDINGS_DIMENSIONS is 0. */
export const KNOWN_DIMENSIONS: Record<string, number> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

export function embeddingsEndpoint(baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  return base.endsWith('/v1') ? `${base}/embeddings` : `${base}/v1/embeddings`;
}

export class OpenAiEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly endpoint: string;
  private readonly inFlight = new Set<AbortController>();
  private closed = false;

  constructor(private readonly opts: OpenAiEmbedderOptions) {
    this.modelId = `openai:${opts.model}`;
    this.dimensions = opts.dimensions;
    this.endpoint = embeddingsEndpoint(opts.baseUrl);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (const batch of this.batches(texts)) out.push(...(await this.request(batch)));
    return out;
  }

  /** Input order kept; each batch within batchSize, 2048 inputs and MAX_REQUEST_BYTES (one oversized text goes alone). */
  private batches(texts: string[]): string[][] {
    const most = Math.min(this.opts.batchSize, MAX_INPUTS_PER_REQUEST);
    const out: string[][] = [];
    let batch: string[] = [];
    let bytes = 0;
    for (const raw of texts) {
      const text = raw === '' ? ' ' : raw; // OpenAI: an input "cannot be an empty string"
      const size = Buffer.byteLength(text, 'utf8');
      if (batch.length > 0 && (batch.length >= most || bytes + size > MAX_REQUEST_BYTES)) {
        out.push(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(text);
      bytes += size;
    }
    if (batch.length > 0) out.push(batch);
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const c of this.inFlight) c.abort();
  }

  private async request(input: string[]): Promise<Float32Array[]> {
    if (this.closed) throw new EmbeddingError('embedder is closed', 'closed');
    const controller = new AbortController();
    this.inFlight.add(controller);
    const deadline = performance.now() + this.opts.timeoutMs;
    const maxRetries = this.opts.maxRetries ?? DEFAULT_MAX_RETRIES;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    const body = JSON.stringify({ model: this.opts.model, input });
    try {
      for (let attempt = 0; ; attempt++) {
        const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(Math.max(1, Math.ceil(deadline - performance.now())))]);
        let res: Response;
        let text: string;
        try {
          res = await fetch(this.endpoint, { method: 'POST', headers, signal, body });
          text = await res.text(); // the timeout covers the body too
        } catch (err) {
          const failure = this.transportError(err, signal);
          // A connection the server dropped (typically a pooled keep-alive one it had just closed) is
          // retried like a 5xx: an embeddings request has no side effect. A refused connection is not:
          // the server is down, and the caller should hear so now.
          if (failure.reason !== 'network' || !isConnectionDrop(err) || attempt >= maxRetries) throw failure;
          const wait = this.backoffMs(attempt);
          if (performance.now() + wait >= deadline) throw failure;
          await this.pause(wait, controller);
          continue;
        }
        const status = res.status;
        if (status >= 200 && status < 300) return this.parse(text, input.length);
        if (status === 401 || status === 403) {
          throw new EmbeddingError(`embeddings server refused the credentials (${status}): ${upstreamMessage(text)}`, 'upstream_auth');
        }
        const reason: EmbeddingFailure = status === 429 ? 'rate_limited' : REFUSES_INPUT.has(status) ? 'input_rejected' : 'upstream_status';
        const failure = (extra = '') => new EmbeddingError(`embeddings server answered ${status}${extra}: ${upstreamMessage(text)}`, reason);
        if (!isRetryable(status) || attempt >= maxRetries) throw failure(attempt > 0 ? ` (after ${attempt + 1} attempts)` : '');
        const wait = retryAfterMs(res.headers) ?? this.backoffMs(attempt);
        if (performance.now() + wait >= deadline) {
          throw failure(`; a retry in ${Math.round(wait)} ms would pass the ${this.opts.timeoutMs} ms limit`);
        }
        await this.pause(wait, controller);
      }
    } finally {
      this.inFlight.delete(controller);
    }
  }

  /** Waits before a retry; close() ends the wait at once with `closed`. */
  private async pause(ms: number, controller: AbortController): Promise<void> {
    try {
      await sleep(ms, undefined, { signal: controller.signal });
    } catch (err) {
      throw new EmbeddingError('embedder closed', 'closed', { cause: err });
    }
  }

  private backoffMs(attempt: number): number {
    const base = (this.opts.retryBaseMs ?? DEFAULT_RETRY_BASE_MS) * 2 ** attempt;
    return base * (1 - 0.25 * Math.random());
  }

  private transportError(err: unknown, signal: AbortSignal): EmbeddingError {
    if (this.closed) return new EmbeddingError('embedder closed', 'closed', { cause: err });
    if (signal.aborted) {
      return new EmbeddingError(`embeddings server did not answer within ${this.opts.timeoutMs} ms`, 'timeout', { cause: err });
    }
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const detail = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    return new EmbeddingError(`embeddings server unreachable at ${this.endpoint}: ${detail}`, 'network', { cause: err });
  }

  private parse(text: string, expected: number): Float32Array[] {
    const bad = (why: string) => new EmbeddingError(`embeddings server sent an unusable response: ${why}`, 'bad_response');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw bad('not JSON');
    }
    const data = (body as { data?: unknown })?.data;
    if (!Array.isArray(data)) throw bad('no data array');
    if (data.length !== expected) throw bad(`${data.length} embeddings for ${expected} inputs`);
    const out: Float32Array[] = new Array(expected);
    for (const item of data as { embedding?: unknown; index?: unknown }[]) {
      const { embedding, index } = item ?? {};
      if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= expected || out[index as number]) {
        throw bad(`bad or repeated index ${JSON.stringify(index)}`);
      }
      if (!Array.isArray(embedding) || embedding.length !== this.dimensions) {
        throw bad(`embedding of length ${Array.isArray(embedding) ? embedding.length : 'none'}, expected ${this.dimensions} (SVC_EMBEDDINGS_DIMENSIONS)`);
      }
      const v = Float32Array.from(embedding as number[]);
      if (!v.every(Number.isFinite)) throw bad('embedding has a non-number');
      out[index as number] = normaliseInPlace(v);
    }
    return out;
  }
}

/**
 * Statuses that refuse the inputs themselves: 400 (OpenAI: a text over the model's context length,
 * an empty or malformed input), 413 (Hugging Face TEI: a batch or text over its token limit), 422
 * (TEI and vLLM: input validation). Not retried; the vector indexer isolates the text at fault.
 */
const REFUSES_INPUT = new Set([400, 413, 422]);

/** The connection broke under the request (reset, closed by the server, broken pipe): worth one more try. */
function isConnectionDrop(err: unknown): boolean {
  const code = (err as { cause?: { code?: string } }).cause?.code;
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED';
}

/** Statuses OpenAI's SDKs retry: 408 Request Timeout, 409 Conflict, 429 Rate Limit, >=500. */
function isRetryable(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The server's requested wait: `retry-after-ms` (milliseconds, sent by OpenAI/Azure), else
 * `retry-after` (seconds or an HTTP date, RFC 9110). Undefined when absent or unusable.
 */
export function retryAfterMs(headers: Headers): number | undefined {
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const seconds = retryAfterSeconds(headers.get('retry-after'));
  return seconds === undefined ? undefined : seconds * 1000;
}

/** The provider's own error message (OpenAI shape `{error:{message}}` or plain text), shortened. */
function upstreamMessage(text: string): string {
  try {
    const msg = (JSON.parse(text) as { error?: { message?: unknown } | string }).error;
    const m = typeof msg === 'string' ? msg : msg?.message;
    if (typeof m === 'string') return m.slice(0, 200);
  } catch {
    // not JSON
  }
  return text.slice(0, 200) || '(empty body)';
}
