import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startBraveFake, startTavilyFake, type FakeSearchProvider } from './fakes/search-providers';
import { setDailyCount, startWebApp, type WebApp } from './search-support';

/** GET /v1/search against loopback fakes of Brave (primary) and Tavily (fallback), real clients. */
let brave: FakeSearchProvider;
let tavily: FakeSearchProvider;
let w: WebApp;

beforeAll(async () => {
  brave = await startBraveFake({ apiKey: 'brave-key' });
  tavily = await startTavilyFake({ apiKey: 'tvly-key' });
  w = await startWebApp({
    SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'brave-key', SVC_BRAVE_URL: brave.url,
    SVC_SEARCH_FALLBACK: 'tavily', SVC_TAVILY_API_KEY: 'tvly-key', SVC_TAVILY_URL: tavily.url,
    SVC_SEARCH_TIMEOUT_MS: '400', SVC_SEARCH_CACHE: 'memory',
  }, { listen: true });
});
afterAll(async () => {
  await w?.close();
  await brave?.close();
  await tavily?.close();
});
beforeEach(() => {
  brave.reset();
  tavily.reset();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const get = (q: string, token?: string, n?: number) =>
  w.request('GET', `/v1/search?q=${encodeURIComponent(q)}${n === undefined ? '' : `&num_results=${n}`}`, { token });

describe('GET /v1/search', () => {
  test('answers the spec shape: scored results, usage object, cached flag, _svc with search_id', async () => {
    const a = await w.agent();
    const res = await get('solar eclipse', a.token, 8);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const b = res.body;
    expect(Object.keys(b)).toEqual(['status', 'query', 'provider_used', 'results', 'usage', 'cached', 'response_time_ms', '_svc']);
    expect(b).toMatchObject({ status: 'success', query: 'solar eclipse', provider_used: 'brave', cached: false });
    expect(b.results).toHaveLength(8);
    expect(Object.keys(b.results[0])).toEqual(['title', 'url', 'snippet', 'source', 'credibility_score', 'published_date']);
    const bySource = Object.fromEntries(b.results.map((r: any) => [r.source, r.credibility_score]));
    expect(bySource).toMatchObject({ 'nasa.gov': 1, 'ox.ac.uk': 0.9, 'reuters.com': 0.8, 'en.wikipedia.org': 0.7, 'example.com': 0.5 });
    expect(b.results[0].snippet).not.toContain('<strong>');
    expect(b.results[0].published_date).toBe('2024-03-01T10:00:00.000Z');
    expect(b.results[1].published_date).toBeNull();
    expect(b.usage).toEqual({
      calls_total: 1, calls_remaining: null, over_limit: false, upgrade_url: expect.stringContaining('/billing'),
      search_quota_period: 'trial_credits', search_calls_limit: 50, search_overage_rate_per_call: '0.0200',
    });
    expect(typeof b.response_time_ms).toBe('number');
    expect(b._svc.search_id).toMatch(UUID);
    expect(b._svc.usage).toMatchObject({ credits_remaining_usd: '0.0000', tier_label: 'Free' });
    expect(b._svc).toHaveProperty('feedback_url');
    expect(brave.log[0].count).toBe(8);
  });

  test('a second identical search is a cache hit: the provider is not asked, the call still counts', async () => {
    const a = await w.agent();
    const first = await get('Cache Me', a.token, 5);
    const second = await get('  cache   me ', a.token, 5);
    expect(first.body.cached).toBe(false);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ cached: true, provider_used: 'brave', query: '  cache   me ' });
    expect(second.body.results).toEqual(first.body.results);
    expect(brave.requests).toBe(1);
    expect(second.body.usage.calls_total).toBe(2);
    expect(second.body._svc.search_id).not.toBe(first.body._svc.search_id);
    // A different num_results is another cache entry.
    expect((await get('cache me', a.token, 6)).body.cached).toBe(false);
    expect(brave.requests).toBe(2);
  });

  test('the answer is valid JSON whatever the query holds (quotes, backslashes, control characters, non-ASCII), fresh or cached', async () => {
    const a = await w.agent();
    const q = 'say "hi" \\ back\\slash \u0001 tab\t ünïcödé 🔭 </script>';
    for (const cached of [false, true]) {
      const res = await get(q, a.token, 3);
      expect(res.status).toBe(200);
      // The helper parses the body as JSON and keeps the raw text when that fails.
      expect(typeof res.body).toBe('object');
      expect(res.body).toMatchObject({ query: q, cached });
      expect(res.body.results).toHaveLength(3);
    }
  });

  test('primary failure: the fallback answers once, and its answer is never cached', async () => {
    const a = await w.agent();
    brave.mode = 'http500';
    const r1 = await get('fallback topic', a.token);
    expect(r1.status).toBe(200);
    expect(r1.body).toMatchObject({ provider_used: 'tavily', cached: false });
    const r2 = await get('fallback topic', a.token);
    expect(r2.body).toMatchObject({ provider_used: 'tavily', cached: false });
    expect(tavily.requests).toBe(2);
    expect(brave.requests).toBe(2);
  });

  test.each([
    ['http500', 'http500', 502, 'SEARCH_PROVIDER_ERROR'],
    ['malformed', 'http429', 502, 'SEARCH_PROVIDER_ERROR'],
    ['hang', 'hang', 504, 'SEARCH_PROVIDER_TIMEOUT'],
  ] as const)('primary %s, fallback %s: %i %s, and the failed call is not counted', async (pm, fm, status, code) => {
    const a = await w.agent();
    brave.mode = pm;
    tavily.mode = fm;
    const res = await get(`failing ${pm}`, a.token);
    expect(res.status).toBe(status);
    expect(res.body.error_code).toBe(code);
    expect(res.body.message).not.toMatch(/brave-key|tvly-key/);
    brave.mode = 'ok';
    const ok = await get(`after ${pm}`, a.token);
    expect(ok.body.usage.calls_total).toBe(1);
  });

  test('both providers rate-limited: 502 SEARCH_PROVIDER_ERROR still passes the sooner wait on', async () => {
    const a = await w.agent();
    brave.mode = 'http429'; // no Retry-After: X-RateLimit-Reset "1, ..." with the per-second window exhausted
    tavily.mode = 'http429'; // Retry-After: 7
    const res = await get('both limited', a.token);
    expect(res.status).toBe(502);
    expect(res.body.error_code).toBe('SEARCH_PROVIDER_ERROR');
    expect(res.headers['retry-after']).toBe('1');
  });

  test('Brave rate-limited without a fallback answer: Retry-After comes from its X-RateLimit-Reset, up to an hour', async () => {
    const a = await w.agent();
    brave.mode = 'http429'; // 429 RATE_LIMITED, per-second window exhausted
    tavily.mode = 'http500';
    const limited = await get('brave rate limited', a.token);
    expect([limited.status, limited.body.error_code, limited.headers['retry-after']]).toEqual([502, 'SEARCH_PROVIDER_ERROR', '1']);
    // The monthly quota's wait (~30 days) is the operator's to fix: not passed on to the agent.
    brave.mode = 'quota'; // 429 QUOTA_LIMITED, monthly window exhausted
    const quota = await get('brave quota', a.token);
    expect([quota.status, quota.body.error_code]).toEqual([502, 'SEARCH_PROVIDER_ERROR']);
    expect(quota.headers['retry-after']).toBeUndefined();
  });

  test.each([
    ['', 'q empty'],
    ['x'.repeat(501), 'q over 500 characters'],
    ['   ', 'q only spaces'],
    ['\u0085 \u0085', 'q only NEL and a space (String.trim keeps NEL)'],
  ])('422 for a bad query (%#: %s)', async (q) => {
    const a = await w.agent();
    const res = await get(q, a.token);
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('VALIDATION_FAILED');
    expect(brave.requests).toBe(0);
  });

  test.each(['0', '21', 'ten', '2.5'])('422 for num_results=%s', async (n) => {
    const a = await w.agent();
    const res = await w.request('GET', `/v1/search?q=x&num_results=${n}`, { token: a.token });
    expect(res.status).toBe(422);
    expect(res.body.field).toBe('querystring.num_results');
  });

  test('a client that hangs up cancels the provider call: no fallback is asked and the call is given back', async () => {
    const a = await w.agent();
    brave.mode = 'hang';
    const ac = new AbortController();
    const pending = fetch(`${w.url}/v1/search?q=hang-up`, { headers: { authorization: `Bearer ${a.token}` }, signal: ac.signal }).catch(() => 'aborted');
    for (let i = 0; i < 100 && brave.requests === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(brave.requests).toBe(1);
    ac.abort();
    expect(await pending).toBe('aborted');
    // Without the cancel, Brave would time out at 400 ms and Tavily would be asked.
    await new Promise((r) => setTimeout(r, 900));
    expect(tavily.requests).toBe(0);
    expect((await w.request('GET', '/v1/usage', { token: a.token })).body.pools.search.calls_this_month).toBe(0);
  });

  test('HEAD is not a way to search: no automatic HEAD route, no provider call, nothing counted', async () => {
    const a = await w.agent();
    const head = await w.request('HEAD', `/v1/search?q=${encodeURIComponent('head request')}`, { token: a.token });
    expect(head.status).toBe(404);
    expect(brave.requests).toBe(0);
    expect((await w.request('GET', '/v1/usage', { token: a.token })).body.pools.search.calls_this_month).toBe(0);
  });

  test('a 500-character query is accepted', async () => {
    const a = await w.agent();
    expect((await get('word '.repeat(100).trim().padEnd(500, 'x'), a.token)).status).toBe(200);
  });

  test('no key, a wrong key: 401 INVALID_API_KEY and no provider call', async () => {
    expect((await get('x')).body.error_code).toBe('INVALID_API_KEY');
    const wrong = await get('x', 'svc_not-a-real-key');
    expect(wrong.status).toBe(401);
    expect(wrong.body.error_code).toBe('INVALID_API_KEY');
    expect(brave.requests).toBe(0);
  });
});

describe('search quota', () => {
  test('free tier: 50 free searches per rolling 30 days, then 402 INSUFFICIENT_CREDITS (no credit)', async () => {
    const a = await w.agent();
    let last: any;
    for (let i = 0; i < 50; i++) last = await get('floor', a.token, 3);
    expect(last.status).toBe(200);
    expect(last.body.usage).toMatchObject({ calls_total: 50, over_limit: true });
    const refused = await get('floor', a.token, 3);
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ error_code: 'INSUFFICIENT_CREDITS', upgrade_url: last.body.usage.upgrade_url });
    expect(refused.body.upgrade_url).toMatch(/\/billing$/); // the billing page, as every limit error says, not an API route
    expect(refused.body.message).toContain('POST /v1/billing/credits/checkout');
    // The floor is rolling: 30 days later the calls have aged out.
    w.clock.advanceDays(30);
    const again = await get('floor', a.token, 3);
    expect(again.status).toBe(200);
    w.clock.advanceDays(-30);
  });

  test('legacy monthly tier: usage counts the UTC month; past the quota without credit 429 SEARCH_CALLS_LIMIT', async () => {
    const a = await w.agent('starter');
    await setDailyCount(w, a.id, 'search', 2998);
    const ok = await get('monthly', a.token, 2);
    expect(ok.body.usage).toEqual({
      calls_total: 2999, calls_remaining: 1, over_limit: false, upgrade_url: expect.any(String),
      search_quota_period: 'monthly', search_calls_limit: 3000, search_overage_rate_per_call: '0.015',
    });
    const last = await get('monthly', a.token, 2);
    expect(last.body.usage).toMatchObject({ calls_total: 3000, calls_remaining: 0, over_limit: true });
    const refused = await get('monthly', a.token, 2);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error_code: 'SEARCH_CALLS_LIMIT', upgrade_url: expect.any(String) });
  });
});
