// Each real client against its loopback fake: happy path, auth, and every failure mode.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startFakeSearchProvider, type FakeProviderKind, type FakeSearchProvider } from '../../../test/fakes/search-providers';
import { BraveProvider } from './brave';
import { SearxngProvider } from './searxng';
import { TavilyProvider } from './tavily';
import { SearchProviderError, type SearchProvider } from './types';

function client(kind: FakeProviderKind, baseUrl: string, apiKey: string | undefined, timeoutMs = 2000): SearchProvider {
  if (kind === 'searxng') return new SearxngProvider({ baseUrl, timeoutMs });
  if (kind === 'brave') return new BraveProvider({ baseUrl, apiKey: apiKey!, timeoutMs });
  return new TavilyProvider({ baseUrl, apiKey: apiKey!, timeoutMs });
}

async function failure(p: Promise<unknown>): Promise<SearchProviderError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(SearchProviderError);
  return err as SearchProviderError;
}

describe.each(['searxng', 'brave', 'tavily'] as const)('%s client', (kind) => {
  let fake: FakeSearchProvider;
  let p: SearchProvider;
  beforeAll(async () => {
    fake = await startFakeSearchProvider(kind);
    p = client(kind, fake.url, fake.apiKey);
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  test('returns normalised hits, at most numResults, with its fixed name', async () => {
    const r = await p.search('solar  eclipse', 7);
    expect(p.name).toBe(kind);
    expect(r).toHaveLength(7);
    expect(r[0]).toEqual({
      title: 'solar eclipse & more: result 1',
      url: 'https://www.nasa.gov/solar-eclipse/1',
      snippet: 'About solar eclipse from www.nasa.gov (#1).',
      published_date: '2024-03-01T10:00:00.000Z',
    });
    expect(r[1]!.published_date).toBeNull();
    expect(fake.requests).toBe(1);
    expect(fake.log[0]!.authorized).toBe(true);
  });

  test('clamps numResults to 1..20', async () => {
    expect(await p.search('x', 50)).toHaveLength(20);
    expect(await p.search('x', 0)).toHaveLength(1);
  });

  test('an empty answer is an empty array, not an error', async () => {
    fake.mode = 'empty';
    expect(await p.search('nothing here', 5)).toEqual([]);
  });

  test('HTTP 500 is SEARCH_PROVIDER_ERROR with the status', async () => {
    fake.mode = 'http500';
    const e = await failure(p.search('q', 5));
    expect([e.code, e.provider, e.status, e.reason]).toEqual(['SEARCH_PROVIDER_ERROR', kind, 500, 'http_status']);
    expect(e.httpStatus).toBe(502);
  });

  test('HTTP 429 is a rate-limit error carrying the wait (Retry-After; Brave: X-RateLimit-Reset)', async () => {
    fake.mode = 'http429';
    const e = await failure(p.search('q', 5));
    // Brave sends no Retry-After: its exhausted per-second window resets in 1 s.
    expect([e.code, e.status, e.reason, e.retryAfterSeconds]).toEqual(['SEARCH_PROVIDER_ERROR', 429, 'rate_limited', kind === 'brave' ? 1 : 7]);
  });

  test('a body that is not JSON is a malformed-answer error', async () => {
    fake.mode = 'malformed';
    const e = await failure(p.search('q', 5));
    expect([e.code, e.reason, e.status]).toEqual(['SEARCH_PROVIDER_ERROR', 'malformed', 200]);
  });

  test('JSON without a results array is a malformed-answer error', async () => {
    fake.mode = 'wrong_shape';
    const e = await failure(p.search('q', 5));
    expect([e.code, e.reason]).toEqual(['SEARCH_PROVIDER_ERROR', 'malformed']);
  });

  test('a provider that never answers gives SEARCH_PROVIDER_TIMEOUT after timeoutMs', async () => {
    fake.mode = 'hang';
    const slow = client(kind, fake.url, fake.apiKey, 250);
    const t0 = performance.now();
    const e = await failure(slow.search('q', 5));
    const took = performance.now() - t0;
    expect([e.code, e.reason, e.httpStatus]).toEqual(['SEARCH_PROVIDER_TIMEOUT', 'timeout', 504]);
    expect(took).toBeGreaterThanOrEqual(200);
    expect(took).toBeLessThan(2000);
  });

  test('the limit covers the body too: headers on time, body never finished', async () => {
    fake.mode = 'stall_body';
    const e = await failure(client(kind, fake.url, fake.apiKey, 200).search('q', 5));
    expect(e.code).toBe('SEARCH_PROVIDER_TIMEOUT');
  });

  test('an answer slower than the limit times out', async () => {
    fake.delayMs = 600;
    const e = await failure(client(kind, fake.url, fake.apiKey, 200).search('q', 5));
    expect(e.code).toBe('SEARCH_PROVIDER_TIMEOUT');
  });

  test('the caller aborting gives SEARCH_ABORTED, not a timeout', async () => {
    fake.mode = 'hang';
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const e = await failure(p.search('q', 5, ac.signal));
    expect(e.code).toBe('SEARCH_ABORTED');
    const pre = await failure(p.search('q', 5, AbortSignal.abort()));
    expect(pre.code).toBe('SEARCH_ABORTED');
  });

  test('connection refused is a network error', async () => {
    const gone = await startFakeSearchProvider(kind);
    await gone.close();
    const e = await failure(client(kind, gone.url, gone.apiKey).search('q', 5));
    expect([e.code, e.reason]).toEqual(['SEARCH_PROVIDER_ERROR', 'network']);
  });

  if (kind !== 'searxng') {
    test('a wrong key is an auth error (Brave: 422 SUBSCRIPTION_TOKEN_INVALID; Tavily: 401)', async () => {
      const bad = client(kind, fake.url, 'wrong-key');
      const e = await failure(bad.search('q', 5));
      expect([e.code, e.reason, e.status]).toEqual(['SEARCH_PROVIDER_ERROR', 'auth', kind === 'brave' ? 422 : 401]);
      expect(fake.log[0]!.authorized).toBe(false);
      expect(e.message).not.toContain('wrong-key');
    });
  }
});
