import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startBlobApp, type BlobApp } from './blobs-support';

/**
 * Error answers of the /v1/commons routes not covered by commons.test.ts:
 *   - 429 RATE_LIMIT_EXCEEDED on all six routes once the per-agent commons budget
 *     (SVC_MEMORY_RATE_PER_MINUTE) is spent; the budget is per agent and apart from memory's;
 *   - 503 COMMONS_SEARCH_UNAVAILABLE when no embeddings provider is configured, and when the
 *     provider (a loopback OpenAI-compatible fake) fails;
 *   - 422 VALIDATION_FAILED for out-of-bounds limit/threshold (search) and page/per_page (entries),
 *     with the accepted edge values answering 200.
 * Apps come from the blob tests' set-up (test/blobs-support.ts), which builds svc directly so an agent
 * can be moved to a paying tier (publishers).
 */

const start = (env: Record<string, string>) => startBlobApp('fs', env);

describe('no embeddings provider, 6 requests per minute', () => {
  const RATE = 6;
  let h: BlobApp;
  beforeAll(async () => {
    h = await start({ SVC_EMBEDDINGS: 'none', SVC_MEMORY_RATE_PER_MINUTE: String(RATE) });
  });
  afterAll(async () => {
    await h?.close();
  });

  const ID = '00000000-0000-4000-8000-000000000000';
  test.each([
    ['POST', '/v1/commons/entries', { key: 'k', value: 1 }],
    ['GET', '/v1/commons/entries', undefined],
    ['GET', '/v1/commons/search?q=anything', undefined],
    ['GET', `/v1/commons/entries/${ID}`, undefined],
    ['POST', `/v1/commons/entries/${ID}/vouch`, undefined],
    ['DELETE', `/v1/commons/entries/${ID}`, undefined],
  ] as const)('%s %s past the budget → 429 RATE_LIMIT_EXCEEDED with Retry-After', async (method, url, body) => {
    const a = await h.agent('spark');
    const minuteStart = h.clock.now() - (h.clock.now() % 60_000);
    h.clock.set(minuteStart + 60_000 + 15_000); // a fresh window, 45 s before its end
    for (let i = 0; i < RATE; i++) expect((await h.request('GET', '/v1/commons/entries', { token: a.token })).status).toBe(200);
    const limited = await h.request(method, url, { token: a.token, body });
    expect(limited.status).toBe(429);
    expect(limited.body.error_code).toBe('RATE_LIMIT_EXCEEDED');
    expect(limited.body).toMatchObject({ retry_after_seconds: 45, limit_per_minute: RATE });
    expect(limited.body.upgrade_url).toMatch(/^http/);
    expect(limited.headers['retry-after']).toBe('45');
    expect(limited.headers['x-ratelimit-limit']).toBe(String(RATE));
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
  });

  test('the budget is per agent and apart from memory\'s; the next minute is open again', async () => {
    const a = await h.agent('free');
    const minuteStart = h.clock.now() - (h.clock.now() % 60_000);
    h.clock.set(minuteStart + 60_000 + 15_000);
    for (let i = 0; i < RATE; i++) expect((await h.request('GET', '/v1/commons/entries', { token: a.token })).status).toBe(200);
    const limited = await h.request('GET', '/v1/commons/entries', { token: a.token });
    expect(limited.status).toBe(429);
    expect(limited.body.error_code).toBe('RATE_LIMIT_EXCEEDED');
    // Another agent has its own commons budget.
    const other = await h.agent('free');
    const ok = await h.request('GET', '/v1/commons/entries', { token: other.token });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('success');
    // The same agent's memory budget is untouched.
    const mem = await h.request('GET', '/v1/memory/stats', { token: a.token });
    expect(mem.status).toBe(200);
    h.clock.advanceSeconds(45);
    const again = await h.request('GET', '/v1/commons/entries', { token: a.token });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('success');
  });

  test('search without an embeddings provider → 503 COMMONS_SEARCH_UNAVAILABLE', async () => {
    const a = await h.agent('free');
    const r = await h.request('GET', '/v1/commons/search?q=how%20to%20make%20pancakes', { token: a.token });
    expect(r.status).toBe(503);
    expect(r.body.error_code).toBe('COMMONS_SEARCH_UNAVAILABLE');
    expect(r.body.message).toMatch(/not available/);
  });
});

describe('embeddings from a loopback OpenAI-compatible fake', () => {
  let fake: FakeEmbeddingsServer;
  let h: BlobApp;
  let reader: { token: string; id: string };
  beforeAll(async () => {
    fake = await startFakeEmbeddings({ dimensions: 32 });
    h = await start({
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'fake-model', SVC_EMBEDDINGS_DIMENSIONS: '32',
      SVC_EMBEDDINGS_TIMEOUT_MS: '2000', SVC_MEMORY_INDEX_INTERVAL_MS: '600000', SVC_SEARCH_EMBED_WAIT_MS: '120000', SVC_MEMORY_RATE_PER_MINUTE: '0',
    });
    const pub = await h.agent('spark');
    reader = await h.agent('free');
    for (const key of ['pancakes.recipe', 'pancakes.toppings', 'waffles.recipe']) {
      const r = await h.request('POST', '/v1/commons/entries', { token: pub.token, body: { key, value: `${key.replace('.', ' ')} notes` } });
      expect(r.status).toBe(201);
      h.clock.advanceSeconds(1);
    }
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });

  test('embeddings upstream failing → 503 COMMONS_SEARCH_UNAVAILABLE; recovery answers 200', async () => {
    fake.mode = 'status500';
    try {
      const down = await h.request('GET', '/v1/commons/search?q=pancakes&threshold=0', { token: reader.token });
      expect(down.status).toBe(503);
      expect(down.body.error_code).toBe('COMMONS_SEARCH_UNAVAILABLE');
      expect(down.body.message).toMatch(/upstream/);
    } finally {
      fake.mode = 'ok';
    }
    const up = await h.request('GET', '/v1/commons/search?q=pancakes&threshold=0', { token: reader.token });
    expect(up.status).toBe(200);
    expect(up.body.results.length).toBeGreaterThan(0);
  });

  test.each([
    'limit=0', 'limit=21', 'limit=-1', 'limit=1.5', 'threshold=-0.01', 'threshold=1.01',
  ])('search with %s → 422 VALIDATION_FAILED', async (param) => {
    const r = await h.request('GET', `/v1/commons/search?q=pancakes&${param}`, { token: reader.token });
    expect(r.status).toBe(422);
    expect(r.body.error_code).toBe('VALIDATION_FAILED');
  });

  test('search at the edges: limit 1 and 20, threshold 0 and 1 → 200', async () => {
    const one = await h.request('GET', '/v1/commons/search?q=pancakes%20recipe&limit=1&threshold=0', { token: reader.token });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ status: 'success', query: 'pancakes recipe', total_returned: 1 });
    expect(one.body.results).toHaveLength(1);
    const twenty = await h.request('GET', '/v1/commons/search?q=pancakes%20recipe&limit=20&threshold=0', { token: reader.token });
    expect(twenty.status).toBe(200);
    expect(twenty.body.total_returned).toBe(3);
    expect(twenty.body.results.map((e: any) => e.key).sort()).toEqual(['pancakes.recipe', 'pancakes.toppings', 'waffles.recipe']);
    const strict = await h.request('GET', '/v1/commons/search?q=pancakes%20recipe&limit=20&threshold=1', { token: reader.token });
    expect(strict.status).toBe(200);
    expect(strict.body.status).toBe('success');
    expect(strict.body.results.every((e: any) => e.similarity >= 1)).toBe(true);
  });

  test.each([
    'page=0', 'page=1000001', 'page=-1', 'per_page=0', 'per_page=101', 'per_page=2.5',
  ])('entries with %s → 422 VALIDATION_FAILED', async (param) => {
    const r = await h.request('GET', `/v1/commons/entries?${param}`, { token: reader.token });
    expect(r.status).toBe(422);
    expect(r.body.error_code).toBe('VALIDATION_FAILED');
  });

  test('entries at the edges: page 1 and 1000000, per_page 1 and 100 → 200', async () => {
    const first = await h.request('GET', '/v1/commons/entries?page=1&per_page=1', { token: reader.token });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'success', total: 3, page: 1, per_page: 1 });
    expect(first.body.entries.map((e: any) => e.key)).toEqual(['waffles.recipe']);
    const all = await h.request('GET', '/v1/commons/entries?per_page=100', { token: reader.token });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, page: 1, per_page: 100 });
    expect(all.body.entries).toHaveLength(3);
    const last = await h.request('GET', '/v1/commons/entries?page=1000000&per_page=100', { token: reader.token });
    expect(last.status).toBe(200);
    expect(last.body).toMatchObject({ status: 'success', total: 3, page: 1_000_000, per_page: 100, entries: [] });
  });
});
