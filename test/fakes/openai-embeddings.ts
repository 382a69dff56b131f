/**
 * Loopback fake of an OpenAI-compatible embeddings server (`POST /v1/embeddings`), for tests of the
 * real client. It speaks the real wire format (OpenAI API reference, "Create embeddings",
 * https://developers.openai.com/api/reference/resources/embeddings/methods/create): request
 * `{ model, input: string | string[] }`, answer `{ object: 'list', data: [{ object: 'embedding',
 * embedding, index }], model, usage: { prompt_tokens, total_tokens } }`, errors as
 * `{ error: { message, type, param, code } }`.
 *
 * It enforces the documented input limits with a 400 `invalid_request_error`, as OpenAI does: an
 * input may not be an empty string, an array holds at most 2048 inputs, and a request at most 300,000
 * tokens summed over its inputs. Tokens are counted as UTF-8 bytes, the most a byte-level BPE
 * tokenizer can produce, so the fake is never more lenient than the real server.
 *
 * Vectors are a hashed bag of words (deterministic, so equal texts get equal vectors and texts sharing
 * words are closer), scaled by `scale` (real servers such as Ollama may return vectors of any length).
 * With `maxInputTokens` set it refuses a request holding any longer input with OpenAI's 400 ("This
 * model's maximum context length is …"; 8192 for the text-embedding-3 models), the way a real server
 * refuses one text too long for it.
 * `mode` makes it misbehave: 'status500', 'status401', 'status429' (rate limited, with `retry-after`
 * and `x-ratelimit-*` headers), 'status503', 'badJson', 'timeout' (never answers), 'wrongCount',
 * 'wrongDimensions'. `failNext(...)` queues one-off error answers that come before `mode`; `dropNext(n)`
 * makes the next n requests lose their connection (the socket destroyed before any answer: ECONNRESET).
 * With `apiKey` set it demands `Authorization: Bearer <apiKey>`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeEmbeddingsMode =
  | 'ok' | 'status500' | 'status401' | 'status429' | 'status503' | 'badJson' | 'timeout' | 'wrongCount' | 'wrongDimensions';

/** OpenAI's documented limits for one request ("Create embeddings", `input`). */
export const OPENAI_MAX_INPUTS = 2048;
export const OPENAI_MAX_REQUEST_TOKENS = 300_000;

export interface RecordedEmbeddingsRequest {
  path: string;
  authorization?: string;
  body: { model?: unknown; input?: unknown; [k: string]: unknown };
}

/** A one-off error answer: status, extra headers (e.g. retry-after), and the OpenAI error fields. */
export interface ScriptedFailure {
  status: number;
  headers?: Record<string, string>;
  message?: string;
  type?: string;
  code?: string | null;
}

export interface FakeEmbeddingsOptions {
  dimensions?: number;
  apiKey?: string;
  /** Multiplies every vector, so clients must normalise. Default 1 (unit vectors, like OpenAI). */
  scale?: number;
  /** Answer `data` in reverse order, so clients must use `index`. */
  reverse?: boolean;
  /** The model's context length: a longer input gets OpenAI's 400 for the whole request. */
  maxInputTokens?: number;
  /** A slow model: milliseconds to wait before answering a request with these inputs (default none). */
  delayMs?: (inputs: string[]) => number;
}

export interface FakeEmbeddingsServer {
  /** Base address, e.g. http://127.0.0.1:41234 (no /v1). */
  url: string;
  mode: FakeEmbeddingsMode;
  requests: RecordedEmbeddingsRequest[];
  /** Error answers still queued by failNext, first next; assign [] to drop them. */
  failures: ScriptedFailure[];
  /** The next `times` requests (default 1) get this error answer, whatever the mode. */
  failNext(failure: ScriptedFailure, times?: number): void;
  /** Connections of the next `times` requests (default 1) are destroyed before any answer; 0 cancels. */
  dropNext(times?: number): void;
  close(): Promise<void>;
}

export function fakeVector(text: string, dimensions: number, scale = 1): number[] {
  const v = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 2166136261; // FNV-1a
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619) >>> 0;
    v[h % dimensions] += h & 0x80000000 ? -1 : 1;
  }
  if (!v.some((x) => x !== 0)) v[0] = 1; // no words at all
  const norm = Math.hypot(...v);
  return v.map((x) => (x / norm) * scale);
}

/** Upper bound of the tokens of a text for any byte-level BPE tokenizer: its UTF-8 length. */
export const fakeTokenCount = (text: string) => Buffer.byteLength(text, 'utf8');

export async function startFakeEmbeddings(opts: FakeEmbeddingsOptions = {}): Promise<FakeEmbeddingsServer> {
  const dimensions = opts.dimensions ?? 64;
  const state: FakeEmbeddingsServer = {
    url: '', mode: 'ok', requests: [], failures: [],
    failNext: (failure, times = 1) => {
      for (let i = 0; i < times; i++) state.failures.push(failure);
    },
    dropNext: (times = 1) => {
      drops = times === 0 ? 0 : drops + times;
    },
    close: async () => {},
  };
  let drops = 0;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, message: string, type: string, code: string | null, headers?: Record<string, string>) =>
    send(res, status, { error: { message, type, param: null, code } }, headers);
  const rateLimitHeaders = {
    'retry-after': '1',
    'x-ratelimit-limit-requests': '3000', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1s',
    'x-ratelimit-limit-tokens': '1000000', 'x-ratelimit-remaining-tokens': '999000', 'x-ratelimit-reset-tokens': '60ms',
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') return error(res, 404, 'Not found', 'invalid_request_error', null);
    let body: RecordedEmbeddingsRequest['body'];
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return error(res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null);
    }
    state.requests.push({ path: req.url, authorization: req.headers.authorization, body });
    if (drops > 0) {
      drops--;
      return void req.socket.destroy();
    }

    const scripted = state.failures.shift();
    if (scripted) {
      return error(res, scripted.status, scripted.message ?? `Scripted failure ${scripted.status}`,
        scripted.type ?? (scripted.status >= 500 ? 'server_error' : 'invalid_request_error'), scripted.code ?? null, scripted.headers);
    }
    const mode = state.mode;
    if (mode === 'timeout') return; // hold the socket open; close() destroys it
    if (mode === 'status500') return error(res, 500, 'The server had an error while processing your request.', 'server_error', null);
    if (mode === 'status503') return error(res, 503, 'The engine is currently overloaded, please try again later.', 'server_error', null);
    if (mode === 'status401' || (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`)) {
      return error(res, 401, 'Incorrect API key provided: sk-***.', 'invalid_request_error', 'invalid_api_key');
    }
    if (mode === 'status429') {
      return error(res, 429, 'Rate limit reached for requests. Please try again in 1s.', 'requests', 'rate_limit_exceeded', rateLimitHeaders);
    }
    if (mode === 'badJson') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"object":"list","data":[{"embedding":[0.1,');
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (typeof body.model !== 'string' || !Array.isArray(input) || input.length === 0 || !input.every((s) => typeof s === 'string')) {
      return error(res, 400, "'input' must be a string or an array of strings, and 'model' a string", 'invalid_request_error', null);
    }
    if (input.length > OPENAI_MAX_INPUTS) {
      return error(res, 400, `'$.input' is invalid: at most ${OPENAI_MAX_INPUTS} inputs per request.`, 'invalid_request_error', null);
    }
    if (input.some((s) => s === '')) {
      return error(res, 400, "'$.input' is invalid: an input cannot be an empty string.", 'invalid_request_error', null);
    }
    const delay = opts.delayMs?.(input as string[]) ?? 0;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const longest = Math.max(...input.map(fakeTokenCount));
    if (opts.maxInputTokens !== undefined && longest > opts.maxInputTokens) {
      return error(res, 400, `This model's maximum context length is ${opts.maxInputTokens} tokens, however you requested ${longest} tokens `
        + `(${longest} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`, 'invalid_request_error', null);
    }
    const tokens = input.reduce((n, s) => n + fakeTokenCount(s), 0);
    if (tokens > OPENAI_MAX_REQUEST_TOKENS) {
      return error(res, 400, `Requested ${tokens} tokens, max ${OPENAI_MAX_REQUEST_TOKENS} tokens per request`, 'invalid_request_error', 'max_tokens_per_request');
    }
    let data = input.map((text, index) => ({
      object: 'embedding',
      index,
      embedding: fakeVector(text, mode === 'wrongDimensions' ? dimensions + 1 : dimensions, opts.scale ?? 1),
    }));
    if (mode === 'wrongCount') data = data.slice(1);
    if (opts.reverse) data.reverse();
    send(res, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => error(res, 500, String(err), 'server_error', null));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
