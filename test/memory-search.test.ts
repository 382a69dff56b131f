import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

/**
 * Semantic search with the real local model (USE lite in a worker thread). The background indexer
 * is slowed to a crawl so that every search here relies on read-your-writes (the search drains the
 * agent's pending items itself). The long embeddings timeout covers the model's first load on a
 * busy machine.
 */
let t: TestApp;
let a: RegisteredAgent;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_EMBEDDINGS: 'local', SVC_MEMORY_INDEX_INTERVAL_MS: '600000', SVC_SEARCH_EMBED_WAIT_MS: '120000', SVC_EMBEDDINGS_TIMEOUT_MS: '120000' } });
  a = await t.registerAgent();
  const memories: [string, unknown, string?][] = [
    ['user.prefs.editor', { editor: 'vim', theme: 'dark solarized', tabs: 'two spaces' }],
    ['travel.flight', 'Flight to Lisbon departs Tuesday at 07:40 from Heathrow terminal 5', 'high'],
    ['pets.dog', 'My dog Biscuit is a golden retriever who is afraid of thunderstorms'],
    ['infra.db', { database: 'PostgreSQL 15', host: 'db-1.internal', backups: 'nightly at 02:00' }, 'critical'],
    ['finance.budget', 'Quarterly marketing budget is 40,000 euros, approved by the CFO', 'low'],
    ['food.allergy', 'The user is allergic to peanuts and shellfish'],
  ];
  for (const [key, value, importance] of memories) {
    const r = await t.request('PUT', `/v1/memory/${key}`, { token: a.apiKey, body: { value, importance: importance ?? 'normal', source: 'seed' } });
    expect(r.status).toBe(200);
  }
}, 120_000);
afterAll(async () => t?.close());

const search = (qs: string, token = a.apiKey) => t.request('GET', `/v1/memory/search?${qs}`, { token });

describe('GET /v1/memory/search', () => {
  test('a paraphrased question finds the right memory first, above unrelated ones', async () => {
    const cases: [string, string][] = [
      ['which text editor and colour scheme do I like', 'user.prefs.editor'],
      ['when does my plane to Portugal leave', 'travel.flight'],
      ['what kind of pet do I have', 'pets.dog'],
      ['what foods can the user not eat', 'food.allergy'],
    ];
    for (const [q, key] of cases) {
      const res = await search(`q=${encodeURIComponent(q)}&threshold=0&limit=6`);
      expect(res.status).toBe(200);
      expect(res.body.results[0].key).toBe(key);
      expect(res.body.results[0].similarity).toBeGreaterThan(res.body.results[1].similarity);
    }
  }, 60_000);

  test('expired entries the sweeper has not reached yet take no result slot; a threshold equal to a shown similarity keeps that hit', async () => {
    const b = await t.registerAgent();
    for (let i = 0; i < 12; i++) {
      await t.request('PUT', `/v1/memory/tmp.feather${i}`, { token: b.apiKey, body: { value: `ephemeral ostrich feather number ${i}`, ttl: 1 } });
    }
    await t.request('PUT', '/v1/memory/keep.bird', { token: b.apiKey, body: { value: 'an emu egg on the shelf' } });
    const before = await search(`q=${encodeURIComponent('ostrich feather')}&threshold=0&limit=1`, b.apiKey); // indexes all 13
    expect(before.body.results[0].key).toMatch(/^tmp\.feather/);
    t.clock.advanceSeconds(2); // expired, and no sweep has run: their vectors are still in the index
    const res = await search(`q=${encodeURIComponent('ostrich feather')}&threshold=0&limit=1`, b.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: any) => r.key)).toEqual(['keep.bird']);
    const shown = res.body.results[0].similarity;
    const again = await search(`q=${encodeURIComponent('ostrich feather')}&threshold=${shown}&limit=1`, b.apiKey);
    expect(again.body.results.map((r: any) => r.key)).toEqual(['keep.bird']);
  }, 60_000);

  test('hits carry similarity 0..1, the full value, provenance, updated_at and content_trust', async () => {
    const res = await search('q=database%20server%20backups&threshold=0&limit=1');
    expect(res.body).toMatchObject({ status: 'success', query: 'database server backups', total_returned: 1, content_trust: 'untrusted_data' });
    const hit = res.body.results[0];
    expect(hit).toMatchObject({
      key: 'infra.db', value: { database: 'PostgreSQL 15', host: 'db-1.internal', backups: 'nightly at 02:00' },
      importance: 'critical', source: 'seed', confidence: 1, content_trust: 'untrusted_data',
    });
    expect(hit.similarity).toBeGreaterThan(0);
    expect(hit.similarity).toBeLessThanOrEqual(1);
    expect(new Date(hit.updated_at).toISOString()).toBe(hit.updated_at);
    expect(res.body.usage).toHaveProperty('ops_this_month');
  });

  test('limit, threshold and importance floor', async () => {
    expect((await search('q=anything%20at%20all&threshold=0&limit=2')).body.results).toHaveLength(2);
    const high = await search('q=travel%20plans&threshold=0&limit=20&importance=high');
    expect(high.body.results.map((r: any) => r.key).sort()).toEqual(['infra.db', 'travel.flight']);
    expect((await search('q=travel%20plans&threshold=1')).body.results).toEqual([]);
    const dflt = await search('q=which%20editor%20do%20I%20use');
    for (const r of dflt.body.results) expect(r.similarity).toBeGreaterThanOrEqual(0.7); // default threshold
  });

  test('read-your-writes: a PUT that has returned is found by the next search; updates and deletes too', async () => {
    const b = await t.registerAgent();
    await t.request('PUT', '/v1/memory/meeting', { token: b.apiKey, body: { value: 'Dentist appointment on Friday at 3pm' } });
    const first = await search('q=when%20is%20my%20dentist%20visit&threshold=0', b.apiKey);
    expect(first.body.results.map((r: any) => r.key)).toEqual(['meeting']);
    expect(first.body.results[0].value).toMatch(/Dentist/);
    await t.request('PUT', '/v1/memory/meeting', { token: b.apiKey, body: { value: 'Board meeting moved to Monday morning' } });
    const updated = await search('q=board%20meeting&threshold=0', b.apiKey);
    expect(updated.body.results[0].value).toBe('Board meeting moved to Monday morning');
    await t.request('DELETE', '/v1/memory/meeting', { token: b.apiKey });
    expect((await search('q=board%20meeting&threshold=0', b.apiKey)).body.results).toEqual([]);
  });

  test('expired entries are not found', async () => {
    const c = await t.registerAgent();
    await t.request('PUT', '/v1/memory/otp', { token: c.apiKey, body: { value: 'one-time login code 123456', ttl: 30 } });
    expect((await search('q=login%20code&threshold=0', c.apiKey)).body.results).toHaveLength(1);
    t.clock.advanceSeconds(31);
    expect((await search('q=login%20code&threshold=0', c.apiKey)).body.results).toEqual([]);
  });

  test("another agent's memories are never returned", async () => {
    const d = await t.registerAgent();
    const res = await search('q=golden%20retriever%20dog&threshold=0&limit=20', d.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([]);
  });

  test('a search is counted as a search, not as a write: ops_this_month and ops_remaining count writes, as /v1/billing does', async () => {
    const e = await t.registerAgent();
    await t.request('PUT', '/v1/memory/x', { token: e.apiKey, body: { value: 'x' } });
    const s1 = (await t.request('GET', '/v1/memory/stats', { token: e.apiKey })).body;
    expect(s1).toMatchObject({ ops_this_month: 1, searches_this_month: 0 });
    const res = await search('q=x', e.apiKey);
    expect(res.body.usage).toMatchObject({ ops_this_month: 1, ops_remaining: s1.ops_remaining, searches_this_month: 1 });
    await search('q=', e.apiKey); // refused: not counted
    const s2 = (await t.request('GET', '/v1/memory/stats', { token: e.apiKey })).body;
    expect(s2).toMatchObject({ ops_this_month: 1, searches_this_month: 1 });
    expect((await t.request('GET', '/v1/billing', { token: e.apiKey })).body.memory_ops_this_month).toBe(s2.ops_this_month);
  });

  test.each([
    ['', 'MEMORY_QUERY_REQUIRED'], ['q=', 'MEMORY_QUERY_REQUIRED'], ['q=%20%20%09', 'MEMORY_QUERY_REQUIRED'],
    [`q=${'a'.repeat(501)}`, 'VALIDATION_FAILED'] /* MEMORY_QUERY_REQUIRED is for a missing or blank q */, ['q=x&limit=0', 'VALIDATION_FAILED'], ['q=x&limit=21', 'VALIDATION_FAILED'],
    ['q=x&threshold=1.1', 'VALIDATION_FAILED'], ['q=x&threshold=-0.1', 'VALIDATION_FAILED'], ['q=x&importance=top', 'MEMORY_KEY_INVALID'],
  ])('%s → 422 %s', async (qs, code) => {
    const res = await search(qs);
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe(code);
  });

  test('q of 500 characters and limit 20 are accepted', async () => {
    expect((await search(`q=${'a'.repeat(500)}&limit=20`)).status).toBe(200);
  });
});

describe('without an embeddings provider', () => {
  test('503 MEMORY_SEARCH_UNAVAILABLE, after q is validated; the rest of memory works', async () => {
    const none = await startTestApp({ env: { SVC_EMBEDDINGS: 'none' } });
    try {
      const x = await none.registerAgent();
      expect((await none.request('PUT', '/v1/memory/k', { token: x.apiKey, body: { value: 1 } })).status).toBe(200);
      const res = await none.request('GET', '/v1/memory/search?q=hello', { token: x.apiKey });
      expect(res.status).toBe(503);
      expect(res.body.error_code).toBe('MEMORY_SEARCH_UNAVAILABLE');
      expect((await none.request('GET', '/v1/memory/search?q=', { token: x.apiKey })).body.error_code).toBe('MEMORY_QUERY_REQUIRED');
      expect((await none.request('GET', '/v1/memory/stats', { token: x.apiKey })).body.ops_this_month).toBe(1);
    } finally {
      await none.close();
    }
  });
});
