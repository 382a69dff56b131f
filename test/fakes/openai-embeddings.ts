/**
 * Loopback fake of an OpenAI-compatible embeddings server (`POST /v1/embeddings`), for tests of the
 * real client. It speaks the real wire format: request `{ model, input: string | string[] }`, answer
 * `{ object: 'list', data: [{ object: 'embedding', embedding, index }], model, usage }`, errors as
 * `{ error: { message, type, code } }`.
 *
 * Vectors are a hashed bag of words (deterministic, so equal texts get equal vectors and texts sharing
 * words are closer), scaled by `scale` (real servers such as Ollama may return vectors of any length).
 * `mode` makes it misbehave: 'status500', 'status401', 'badJson', 'timeout' (never answers),
 * 'wrongCount', 'wrongDimensions'. With `apiKey` set it demands `Authorization: Bearer <apiKey>`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeEmbeddingsMode = 'ok' | 'status500' | 'status401' | 'badJson' | 'timeout' | 'wrongCount' | 'wrongDimensions';

export interface RecordedEmbeddingsRequest {
  path: string;
  authorization?: string;
  body: { model?: unknown; input?: unknown };
}

export interface FakeEmbeddingsOptions {
  dimensions?: number;
  apiKey?: string;
  /** Multiplies every vector, so clients must normalise. Default 1 (unit vectors, like OpenAI). */
  scale?: number;
  /** Answer `data` in reverse order, so clients must use `index`. */
  reverse?: boolean;
}

export interface FakeEmbeddingsServer {
  /** Base address, e.g. http://127.0.0.1:41234 (no /v1). */
  url: string;
  mode: FakeEmbeddingsMode;
  requests: RecordedEmbeddingsRequest[];
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

export async function startFakeEmbeddings(opts: FakeEmbeddingsOptions = {}): Promise<FakeEmbeddingsServer> {
  const dimensions = opts.dimensions ?? 64;
  const state: FakeEmbeddingsServer = { url: '', mode: 'ok', requests: [], close: async () => {} };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, message: string, type: string, code: string | null) =>
    send(res, status, { error: { message, type, param: null, code } });

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

    const mode = state.mode;
    if (mode === 'timeout') return; // hold the socket open; close() destroys it
    if (mode === 'status500') return error(res, 500, 'The server had an error while processing your request.', 'server_error', null);
    if (mode === 'status401' || (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`)) {
      return error(res, 401, 'Incorrect API key provided: sk-***.', 'invalid_request_error', 'invalid_api_key');
    }
    if (mode === 'badJson') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"object":"list","data":[{"embedding":[0.1,');
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (typeof body.model !== 'string' || !Array.isArray(input) || input.length === 0 || !input.every((s) => typeof s === 'string')) {
      return error(res, 400, "'input' must be a string or an array of strings, and 'model' a string", 'invalid_request_error', null);
    }
    let data = input.map((text, index) => ({
      object: 'embedding',
      index,
      embedding: fakeVector(text, mode === 'wrongDimensions' ? dimensions + 1 : dimensions, opts.scale ?? 1),
    }));
    if (mode === 'wrongCount') data = data.slice(1);
    if (opts.reverse) data.reverse();
    const tokens = input.reduce((n, s) => n + s.split(/\s+/).length, 0);
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
