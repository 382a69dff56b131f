/**
 * Loopback fakes of the web search APIs svc calls (SearXNG, Brave Search, Tavily), speaking their
 * real JSON wire formats so the real clients are exercised. Each listens on 127.0.0.1 with a free
 * port, checks auth the way the real API does, counts requests (so tests can prove caching) and
 * can be switched into failure modes:
 *   ok          results for the query (generated, or `hits` when a test sets them)
 *   empty       the provider's own "nothing found" answer (Brave omits `web` entirely)
 *   http500     500 with the provider's error body
 *   http429     429 rate limit: Tavily and SearXNG with Retry-After: 7; Brave (which documents no
 *               Retry-After) 429 RATE_LIMITED with X-RateLimit-Remaining "0, 1999" and
 *               X-RateLimit-Reset "1, 2591000" (per-second and monthly windows)
 *   quota       Tavily: 432 plan usage limit; Brave: 429 QUOTA_LIMITED, monthly window exhausted
 *               (X-RateLimit-Remaining "1, 0", Reset "1, 2591000"); SearXNG: as http429
 *   hang        accepts the request and never answers (timeouts)
 *   stall_body  sends 200 headers and part of the body, then nothing (body-read timeouts)
 *   malformed   200 with a body that is not JSON
 *   wrong_shape 200 JSON without the results array the client needs
 *   engines_down (SearXNG) no results and every engine listed as unresponsive
 *   json_disabled (SearXNG) `json` not in search.formats: 403 even for format=json
 * Wrong or missing key: Tavily 401 { detail: { error } }; Brave 422 ErrorResponse with code
 * SUBSCRIPTION_TOKEN_INVALID (the real Brave status for a bad token; it is not a 401).
 * Request validation mirrors the real limits: Brave count 1..20 and q <= 400 chars and 50 words (422
 * VALIDATION), Tavily max_results 0..20 and query <= 400 chars (400), SearXNG format=json (else 403).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeProviderKind = 'searxng' | 'brave' | 'tavily';
export type FakeMode = 'ok' | 'empty' | 'http500' | 'http429' | 'quota' | 'hang' | 'stall_body' | 'malformed' | 'wrong_shape' | 'engines_down' | 'json_disabled';

/** A hit in provider-neutral form; the fake renders it in the provider's own fields. */
export interface FakeHit {
  title: string;
  url: string;
  snippet: string;
  /** Rendered as SearXNG publishedDate, Brave page_age, Tavily published_date. */
  date?: string | null;
  /** Brave only: the `age` field (e.g. "2 days ago"). */
  age?: string;
}

export interface FakeSearchRequest {
  method: string;
  path: string;
  /** The query as the provider received it (q or body.query). */
  q: string;
  /** count (Brave), max_results (Tavily); null for SearXNG. */
  count: number | null;
  headers: IncomingHttpHeaders;
  /** Tavily: the parsed JSON body. */
  body?: unknown;
  authorized: boolean;
}

export interface FakeSearchProvider {
  readonly kind: FakeProviderKind;
  /** Base URL to configure (SVC_SEARXNG_URL, SVC_BRAVE_URL, SVC_TAVILY_URL). */
  readonly url: string;
  readonly apiKey: string | undefined;
  mode: FakeMode;
  /** Fixed hits for `ok` (null: generated from the query). */
  hits: FakeHit[] | null;
  /** Answer delay in ms for `ok` and error modes. */
  delayMs: number;
  /** Search requests received (any outcome). */
  readonly requests: number;
  readonly log: FakeSearchRequest[];
  reset(): void;
  close(): Promise<void>;
}

const HOSTS = ['www.nasa.gov', 'www.ox.ac.uk', 'www.reuters.com', 'en.wikipedia.org', 'example.com', 'www.gov.uk', 'web.mit.edu', 'blog.example.net'];

/** Deterministic hits for a query: a spread of hosts so credibility scoring has something to do. */
export function generatedHits(q: string, n: number): FakeHit[] {
  const slug = encodeURIComponent(q.toLowerCase().replace(/\s+/g, '-')).slice(0, 60);
  return Array.from({ length: n }, (_, i) => {
    const host = HOSTS[i % HOSTS.length];
    const day = String((i % 28) + 1).padStart(2, '0');
    return {
      title: `${q} & more: result ${i + 1}`,
      url: `https://${host}/${slug}/${i + 1}`,
      snippet: `About <strong>${q}</strong> from ${host} (#${i + 1}).`,
      date: i % 2 === 0 ? `2024-03-${day}T10:00:00` : null,
    };
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers });
  res.end(text);
}

const braveError = (status: number, code: string, detail: string) =>
  ({ type: 'ErrorResponse', error: { id: '00000000-0000-4000-8000-000000000000', status, code, detail, meta: {} }, time: 1_700_000_000 });

/** Brave's documented rate-limit headers (one value per window: per second, per month); no Retry-After. */
const braveLimitHeaders = (v: { remaining: string; reset: string }): Record<string, string> => ({
  'x-ratelimit-limit': '1, 2000',
  'x-ratelimit-policy': '1;w=1, 2000;w=2592000',
  'x-ratelimit-remaining': v.remaining,
  'x-ratelimit-reset': v.reset,
});

function renderOk(kind: FakeProviderKind, q: string, hits: FakeHit[]): unknown {
  switch (kind) {
    case 'searxng':
      return {
        query: q, number_of_results: 0,
        results: hits.map((h, i) => ({
          url: h.url, title: h.title, content: h.snippet.replace(/<\/?strong>/g, ''), publishedDate: h.date ?? null,
          engine: 'duckduckgo', engines: ['duckduckgo'], positions: [i + 1], score: 1 / (i + 1), category: 'general',
        })),
        answers: [], corrections: [], infoboxes: [], suggestions: [], unresponsive_engines: [],
      };
    case 'brave':
      return {
        type: 'search',
        query: { original: q, more_results_available: false },
        mixed: { type: 'mixed', main: hits.map((_, i) => ({ type: 'web', index: i, all: false })) },
        web: {
          type: 'search', family_friendly: true,
          results: hits.map((h) => ({
            type: 'search_result', title: h.title, url: h.url, description: h.snippet, is_source_local: false,
            language: 'en', family_friendly: true, meta_url: { scheme: 'https', hostname: new URL(h.url).hostname },
            ...(h.date ? { page_age: h.date } : {}), ...(h.age !== undefined ? { age: h.age } : {}),
          })),
        },
      };
    case 'tavily':
      return {
        query: q, follow_up_questions: null, answer: null, images: [],
        results: hits.map((h, i) => ({
          title: h.title, url: h.url, content: h.snippet.replace(/<\/?strong>/g, ''), score: 0.9 - i * 0.01, raw_content: null,
          ...(h.date ? { published_date: h.date } : {}),
        })),
        response_time: 0.42, request_id: '00000000-0000-4000-8000-000000000001',
      };
  }
}

function renderEmpty(kind: FakeProviderKind, q: string): unknown {
  if (kind === 'brave') return { type: 'search', query: { original: q, more_results_available: false } };
  return renderOk(kind, q, []);
}

export async function startFakeSearchProvider(kind: FakeProviderKind, opts: { apiKey?: string } = {}): Promise<FakeSearchProvider> {
  const apiKey = opts.apiKey ?? (kind === 'brave' ? 'BSA-test-key' : kind === 'tavily' ? 'tvly-test-key' : undefined);
  const state = { mode: 'ok' as FakeMode, hits: null as FakeHit[] | null, delayMs: 0, requests: 0, log: [] as FakeSearchRequest[] };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const searchPath = kind === 'brave' ? '/res/v1/web/search' : '/search';
    const method = kind === 'tavily' ? 'POST' : 'GET';
    if (u.pathname !== searchPath || req.method !== method) return send(res, 404, { error: 'not found' });
    state.requests += 1;
    const raw = kind === 'tavily' ? await readBody(req) : '';
    let body: Record<string, unknown> | undefined;
    if (kind === 'tavily') {
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return send(res, 400, { detail: { error: 'Invalid JSON body' } });
      }
    }
    const q = kind === 'tavily' ? String(body?.query ?? '') : (u.searchParams.get('q') ?? '');
    const countRaw = kind === 'brave' ? u.searchParams.get('count') : kind === 'tavily' ? body?.max_results : null;
    const count = countRaw === null || countRaw === undefined ? null : Number(countRaw);
    const authorized = kind === 'searxng' ? true
      : kind === 'brave' ? req.headers['x-subscription-token'] === apiKey
      : req.headers.authorization === `Bearer ${apiKey}`;
    state.log.push({ method: req.method ?? '', path: u.pathname, q, count, headers: req.headers, body, authorized });

    if (state.mode === 'hang') return; // the socket stays open until close()
    if (state.mode === 'stall_body') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.write('{"results": [');
    }
    if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));

    // Authentication and validation come before any mode, as on the real services.
    if (kind === 'brave' && !authorized) return send(res, 422, braveError(422, 'SUBSCRIPTION_TOKEN_INVALID', 'The provided subscription token is invalid.'));
    if (kind === 'tavily' && !authorized) return send(res, 401, { detail: { error: 'Unauthorized: missing or invalid API key.' } });
    if (kind === 'searxng' && (u.searchParams.get('format') !== 'json' || state.mode === 'json_disabled')) return send(res, 403, '403 Forbidden');
    const words = q.trim().split(/\s+/).length;
    if (kind === 'brave' && (q.trim() === '' || q.length > 400 || words > 50 || count === null || !(count >= 1 && count <= 20))) {
      return send(res, 422, braveError(422, 'VALIDATION', 'Unable to validate request parameter(s)'));
    }
    if (kind === 'tavily') {
      if (q.trim() === '') return send(res, 400, { detail: { error: 'Query is missing.' } });
      if (q.length > 400) return send(res, 400, { detail: { error: 'Query is too long. Max query length is 400 characters.' } });
      if (count !== null && !(count >= 0 && count <= 20)) return send(res, 400, { detail: { error: 'max_results must be between 0 and 20.' } });
    }

    switch (state.mode) {
      case 'http500':
        return send(res, 500, kind === 'brave' ? braveError(500, 'INTERNAL', 'Internal server error') : kind === 'tavily' ? { detail: { error: 'Internal Server Error' } } : 'Internal Server Error');
      case 'quota':
        if (kind === 'tavily') return send(res, 432, { detail: { error: "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com" } });
        if (kind === 'brave') {
          return send(res, 429, braveError(429, 'QUOTA_LIMITED', 'Request quota limit exceeded for plan.'),
            braveLimitHeaders({ remaining: '1, 0', reset: '1, 2591000' }));
        }
      // falls through: SearXNG reports limits as 429
      case 'http429':
        if (kind === 'brave') {
          return send(res, 429, braveError(429, 'RATE_LIMITED', 'Request rate limit exceeded for plan.'),
            braveLimitHeaders({ remaining: '0, 1999', reset: '1, 2591000' }));
        }
        return send(res, 429, kind === 'tavily' ? { detail: { error: 'Your request has been blocked due to excessive requests. Please reduce rate of requests.' } } : 'Too Many Requests', { 'retry-after': '7' });
      case 'malformed':
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end('{"results": [{"title": "cut off');
      case 'wrong_shape':
        return send(res, 200, kind === 'brave' ? { type: 'search', web: { type: 'search', results: 'none' } } : { query: q, results: { items: [] } });
      case 'empty':
      case 'json_disabled': // only SearXNG has the setting
        return send(res, 200, renderEmpty(kind, q));
      case 'engines_down':
        if (kind === 'searxng') return send(res, 200, { ...(renderEmpty(kind, q) as object), unresponsive_engines: [['google', 'timeout'], ['duckduckgo', 'CAPTCHA']] });
        return send(res, 200, renderEmpty(kind, q));
      case 'ok': {
        // SearXNG ignores any count and answers one page; the others honour it.
        const n = kind === 'searxng' ? 20 : Math.min(count ?? 5, 20);
        return send(res, 200, renderOk(kind, q, state.hits ?? generatedHits(q, n)));
      }
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    kind,
    url: `http://127.0.0.1:${port}`,
    apiKey,
    get mode() { return state.mode; },
    set mode(m: FakeMode) { state.mode = m; },
    get hits() { return state.hits; },
    set hits(h: FakeHit[] | null) { state.hits = h; },
    get delayMs() { return state.delayMs; },
    set delayMs(ms: number) { state.delayMs = ms; },
    get requests() { return state.requests; },
    get log() { return state.log; },
    reset() {
      Object.assign(state, { mode: 'ok', hits: null, delayMs: 0, requests: 0, log: [] });
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections(); // includes the sockets of hanging requests
      server.close(() => resolve());
    }),
  };
}

export const startSearxngFake = (opts?: { apiKey?: string }) => startFakeSearchProvider('searxng', opts);
export const startBraveFake = (opts?: { apiKey?: string }) => startFakeSearchProvider('brave', opts);
export const startTavilyFake = (opts?: { apiKey?: string }) => startFakeSearchProvider('tavily', opts);
