/**
 * Remote embedder for any OpenAI-compatible `POST {base}/v1/embeddings` (OpenAI, Ollama, vLLM, TEI).
 * Wire format: request `{ model, input: string[] }`, response `{ data: [{ embedding: number[], index }], model }`.
 * The response is checked strictly (one vector per input, each of the configured length, every index
 * once) because a wrong vector stored silently poisons search; vectors are re-normalised since not
 * every server returns unit vectors. Inputs above `batchSize` are sent as several requests in turn.
 * The address is set by the operator, not by agents, so this does not use the SSRF-guarded client.
 */
import { EmbeddingError, normaliseInPlace, type Embedder } from './types';

export interface OpenAiEmbedderOptions {
  /** e.g. https://api.openai.com or http://127.0.0.1:11434 (a trailing /v1 is accepted). */
  baseUrl: string;
  apiKey?: string;
  model: string;
  dimensions: number;
  timeoutMs: number;
  batchSize: number;
}

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
    for (let i = 0; i < texts.length; i += this.opts.batchSize) {
      out.push(...(await this.request(texts.slice(i, i + this.opts.batchSize))));
    }
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
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(this.opts.timeoutMs)]);
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    let status: number;
    let text: string;
    try {
      const res = await fetch(this.endpoint, {
        method: 'POST', headers, signal, body: JSON.stringify({ model: this.opts.model, input }),
      });
      status = res.status;
      text = await res.text(); // the timeout covers the body too
    } catch (err) {
      throw this.transportError(err, signal);
    } finally {
      this.inFlight.delete(controller);
    }
    if (status === 401 || status === 403) {
      throw new EmbeddingError(`embeddings server refused the credentials (${status}): ${upstreamMessage(text)}`, 'upstream_auth');
    }
    if (status < 200 || status >= 300) {
      throw new EmbeddingError(`embeddings server answered ${status}: ${upstreamMessage(text)}`, 'upstream_status');
    }
    return this.parse(text, input.length);
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
