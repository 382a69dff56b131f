// What each client puts on the wire, and provider-specific readings of the answers.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startBraveFake, startSearxngFake, startTavilyFake, type FakeSearchProvider } from '../../../test/fakes/search-providers';
import { BraveProvider, braveRetryAfter } from './brave';
import { capQuery, cleanText, finalize, toIsoDate } from './normalize';
import { SearxngProvider } from './searxng';
import { TavilyProvider } from './tavily';
import { SearchProviderError } from './types';

async function failure(p: Promise<unknown>): Promise<SearchProviderError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(SearchProviderError);
  return err as SearchProviderError;
}

const long = Array.from({ length: 90 }, (_, i) => `word${i}`).join(' '); // 90 words, 529 chars

describe('SearXNG', () => {
  let fake: FakeSearchProvider;
  beforeAll(async () => { fake = await startSearxngFake(); });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  test('GET /search with q and format=json, base URL trailing slash tolerated', async () => {
    const p = new SearxngProvider({ baseUrl: `${fake.url}/`, timeoutMs: 2000 });
    await p.search('  rust async  ', 3);
    const r = fake.log[0]!;
    expect([r.method, r.path, r.q]).toEqual(['GET', '/search', 'rust async']);
    expect(r.headers.accept).toBe('application/json');
  });

  test('takes the first n of its one page (SearXNG ignores any count)', async () => {
    const p = new SearxngProvider({ baseUrl: fake.url, timeoutMs: 2000 });
    expect(await p.search('q', 4)).toHaveLength(4);
    expect(fake.log[0]!.count).toBeNull();
  });

  test('no results because every engine failed is an error, not an empty answer', async () => {
    fake.mode = 'engines_down';
    const p = new SearxngProvider({ baseUrl: fake.url, timeoutMs: 2000 });
    const e = await failure(p.search('q', 5));
    expect([e.code, e.reason]).toEqual(['SEARCH_PROVIDER_ERROR', 'upstream_engines']);
    expect(e.message).toContain('google');
  });

  test('403 because the instance does not serve JSON is a provider error logged as such, not as a bad key', async () => {
    fake.mode = 'json_disabled';
    const e = await failure(new SearxngProvider({ baseUrl: fake.url, timeoutMs: 2000 }).search('q', 5));
    expect([e.code, e.status, e.reason, e.httpStatus]).toEqual(['SEARCH_PROVIDER_ERROR', 403, 'http_status', 502]);
    expect(e.message).toContain('search.formats');
  });

  test('an answer over maxBytes is refused', async () => {
    const e = await failure(new SearxngProvider({ baseUrl: fake.url, timeoutMs: 2000, maxBytes: 500 }).search('q', 5));
    expect([e.code, e.reason]).toEqual(['SEARCH_PROVIDER_ERROR', 'too_large']);
  });

  test('drops hits without an http(s) URL and repeated URLs', async () => {
    fake.hits = [
      { title: 'a', url: 'javascript:alert(1)', snippet: '' },
      { title: 'b', url: 'https://b.example/', snippet: '' },
      { title: 'b again', url: 'https://b.example/', snippet: '' },
      { title: '', url: 'https://c.example/x', snippet: 'c' },
      { title: 'd', url: 'not a url', snippet: '' },
    ];
    const r = await new SearxngProvider({ baseUrl: fake.url, timeoutMs: 2000 }).search('q', 10);
    expect(r.map((h) => [h.title, h.url])).toEqual([['b', 'https://b.example/'], ['https://c.example/x', 'https://c.example/x']]);
  });
});

describe('Brave', () => {
  let fake: FakeSearchProvider;
  beforeAll(async () => { fake = await startBraveFake(); });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());
  const brave = () => new BraveProvider({ baseUrl: fake.url, apiKey: fake.apiKey!, timeoutMs: 2000 });

  test('GET /res/v1/web/search with q, count and X-Subscription-Token', async () => {
    await brave().search('deno', 12);
    const r = fake.log[0]!;
    expect([r.method, r.path, r.q, r.count]).toEqual(['GET', '/res/v1/web/search', 'deno', 12]);
    expect(r.headers['x-subscription-token']).toBe(fake.apiKey);
    expect(r.headers.accept).toBe('application/json');
  });

  test('strips <strong> highlights and decodes entities in description', async () => {
    fake.hits = [{ title: 'A &amp; B <b>bold</b>', url: 'https://x.example/', snippet: 'The <strong>best</strong> &lt;thing&gt; &#8212; really' }];
    const [h] = await brave().search('q', 1);
    expect(h!.title).toBe('A & B bold');
    expect(h!.snippet).toBe('The best <thing> — really');
  });

  test('page_age (zone-less) is read as UTC; a dated `age` is used when page_age is missing; "2 days ago" is null', async () => {
    fake.hits = [
      { title: 'a', url: 'https://a.example/', snippet: '', date: '2023-09-04T15:17:02', age: 'September 4, 2023' },
      { title: 'b', url: 'https://b.example/', snippet: '', age: 'January 5, 2024' },
      { title: 'c', url: 'https://c.example/', snippet: '', age: '2 days ago' },
    ];
    const r = await brave().search('q', 3);
    expect(r.map((h) => h.published_date)).toEqual(['2023-09-04T15:17:02.000Z', '2024-01-05T00:00:00.000Z', null]);
  });

  test('the monthly quota is 429 QUOTA_LIMITED: a quota error, waiting until the monthly window resets', async () => {
    fake.mode = 'quota';
    const e = await failure(brave().search('q', 5));
    expect([e.code, e.status, e.reason, e.retryAfterSeconds]).toEqual(['SEARCH_PROVIDER_ERROR', 429, 'quota', 2591000]);
    expect(e.message).toContain('QUOTA_LIMITED');
  });

  test('the fake refuses what Brave refuses: more than 50 words, even under 400 characters', async () => {
    const q = Array.from({ length: 51 }, (_, i) => `w${i}`).join(' ');
    const res = await fetch(`${fake.url}/res/v1/web/search?q=${encodeURIComponent(q)}&count=5`, { headers: { 'x-subscription-token': fake.apiKey! } });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ type: 'ErrorResponse', error: { code: 'VALIDATION' } });
  });

  test('an error in the `errors` array of the API reference examples is read like `error`', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'ErrorResponse', errors: [{ id: 'x', code: 'SUBSCRIPTION_NOT_FOUND', detail: 'No subscription found.', status: 404, meta: { component: 'subscriptions' } }], time: 1663072993 }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const e = await failure(new BraveProvider({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k', timeoutMs: 2000 }).search('q', 1));
      expect([e.code, e.status, e.reason]).toEqual(['SEARCH_PROVIDER_ERROR', 404, 'auth']);
      expect(e.message).toContain('SUBSCRIPTION_NOT_FOUND');
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test('braveRetryAfter reads the Reset of the exhausted window(s)', () => {
    expect(braveRetryAfter({ 'x-ratelimit-remaining': '0, 1000', 'x-ratelimit-reset': '1, 1419704' })).toBe(1);
    expect(braveRetryAfter({ 'x-ratelimit-remaining': '1, 0', 'x-ratelimit-reset': '1, 1419704' })).toBe(1419704);
    expect(braveRetryAfter({ 'x-ratelimit-remaining': '0, 0', 'x-ratelimit-reset': '1, 1419704' })).toBe(1419704);
    expect(braveRetryAfter({ 'x-ratelimit-remaining': '1, 1000', 'x-ratelimit-reset': '1, 1419704' })).toBeUndefined();
    expect(braveRetryAfter({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1, 1419704' })).toBeUndefined();
    expect(braveRetryAfter({ 'x-ratelimit-remaining': 'x, 0', 'x-ratelimit-reset': '1, 2' })).toBeUndefined();
    expect(braveRetryAfter({})).toBeUndefined();
  });

  test('a query over 400 characters / 50 words is cut so Brave accepts it', async () => {
    const r = await brave().search(long, 3);
    expect(r).toHaveLength(3);
    expect(fake.log[0]!.q.split(' ')).toHaveLength(50);
  });
});

describe('Tavily', () => {
  let fake: FakeSearchProvider;
  beforeAll(async () => { fake = await startTavilyFake(); });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());
  const tavily = () => new TavilyProvider({ baseUrl: fake.url, apiKey: fake.apiKey!, timeoutMs: 2000 });

  test('POST /search, Bearer key in the header (not in the body), max_results', async () => {
    await tavily().search('bun runtime', 6);
    const r = fake.log[0]!;
    expect([r.method, r.path, r.q, r.count]).toEqual(['POST', '/search', 'bun runtime', 6]);
    expect(r.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.body).toMatchObject({ search_depth: 'basic', include_answer: false, include_raw_content: false });
    expect(r.body).not.toHaveProperty('api_key');
  });

  test('RFC 1123 published_date becomes ISO; a query over 400 characters is cut', async () => {
    fake.hits = [{ title: 't', url: 'https://t.example/', snippet: 's', date: 'Mon, 15 Jan 2024 10:00:00 GMT' }];
    const [h] = await tavily().search(long, 1);
    expect(h!.published_date).toBe('2024-01-15T10:00:00.000Z');
    expect(fake.log[0]!.q.length).toBeLessThanOrEqual(400);
  });

  test('plan limit 432 is a quota error', async () => {
    fake.mode = 'quota';
    const e = await failure(tavily().search('q', 1));
    expect([e.code, e.reason, e.status]).toEqual(['SEARCH_PROVIDER_ERROR', 'quota', 432]);
    expect(e.message).toContain('usage limit');
  });
});

describe('normalising helpers', () => {
  test('a result URL is the parsed URL svc scored, not the provider\'s raw string', () => {
    const [hit] = finalize([{ title: 't', url: ' https://ex\tample.gov/a\nb ', snippet: '', date: null }], 1);
    expect(hit.url).toBe('https://example.gov/ab');
    expect(finalize([{ title: 't', url: 'HTTPS://WWW.NASA.GOV./x', snippet: '', date: null }], 1)[0].url).toBe('https://www.nasa.gov./x');
  });

  test('toIsoDate', () => {
    expect(toIsoDate('2024-01-15')).toBe('2024-01-15T00:00:00.000Z');
    expect(toIsoDate('2024-01-15T10:00:00+02:00')).toBe('2024-01-15T08:00:00.000Z');
    expect(toIsoDate('3 hours ago')).toBeNull();
    expect(toIsoDate('2024-02-29')).toBe('2024-02-29T00:00:00.000Z');
    expect(toIsoDate('2024-02-30')).toBeNull(); // Date.parse would roll it over to March 1st
    expect(toIsoDate('2023-02-29T10:00:00Z')).toBeNull();
    expect(toIsoDate('2024-04-31')).toBeNull();
    expect(toIsoDate('2024')).toBeNull(); // a year is no date of publication
    expect(toIsoDate('2024-03')).toBeNull();
    expect(toIsoDate('garbage 2024 text')).toBeNull();
    expect(toIsoDate(null)).toBeNull();
    expect(toIsoDate(1700000000)).toBeNull();
  });
  test('cleanText caps length and never double-decodes', () => {
    expect(cleanText('&amp;lt;', 100)).toBe('&lt;');
    expect(cleanText('x'.repeat(50), 10)).toHaveLength(10);
    expect(cleanText(undefined, 10)).toBe('');
  });
  test('capQuery keeps short queries and cuts at a word boundary', () => {
    expect(capQuery('  a   b ')).toBe('a b');
    const cut = capQuery(long);
    expect(cut.length).toBeLessThanOrEqual(400);
    expect(long.startsWith(cut)).toBe(true);
    expect(long[cut.length]).toBe(' ');
  });
});
