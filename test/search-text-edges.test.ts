import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startBraveFake, startTavilyFake, type FakeSearchProvider } from './fakes/search-providers';
import { startWebApp, type WebApp } from './search-support';

/**
 * Audit of GET /v1/search over real HTTP (a listening svc, fetch) against loopback fakes of Brave
 * (primary) and Tavily (fallback) speaking their wire formats: what svc sends the providers and what
 * it makes of their answers, at the edges the other suites do not reach.
 */
let brave: FakeSearchProvider;
let tavily: FakeSearchProvider;
let w: WebApp;

beforeAll(async () => {
  brave = await startBraveFake({ apiKey: 'brave-key' });
  tavily = await startTavilyFake({ apiKey: 'tvly-key' });
  w = await startWebApp({
    SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'brave-key', SVC_BRAVE_URL: brave.url,
    SVC_SEARCH_FALLBACK: 'tavily', SVC_TAVILY_API_KEY: 'tvly-key', SVC_TAVILY_URL: tavily.url,
    SVC_SEARCH_TIMEOUT_MS: '400', SVC_SEARCH_CACHE: 'off',
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

async function search(token: string, q: string, n?: number): Promise<{ status: number; body: any }> {
  const res = await fetch(`${w.url}/v1/search?q=${encodeURIComponent(q)}${n === undefined ? '' : `&num_results=${n}`}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  let body: any = text;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body };
}

/** Half of a surrogate pair (no character at all), or the replacement character a lost half becomes on the wire. */
const BROKEN_TEXT = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]|\ufffd/;

describe('GET /v1/search: the query sent to a provider', () => {
  test('a query cut to the providers\' 400-unit limit never ends in half an emoji (Brave got U+FFFD, Tavily a lone surrogate)', async () => {
    const a = await w.agent();
    // 500 characters (the API's limit), 999 UTF-16 units: the 400th unit is the first half of an emoji.
    const q = `x${'😀'.repeat(499)}`;
    expect([...q]).toHaveLength(500);
    const ok = await search(a.token, q, 3);
    expect(ok.status).toBe(200);
    expect(brave.log).toHaveLength(1);
    expect(brave.log[0].q).not.toMatch(BROKEN_TEXT);
    expect(q.startsWith(brave.log[0].q)).toBe(true);

    // The fallback (Tavily, JSON body) receives the same cut.
    brave.mode = 'http500';
    const viaFallback = await search(a.token, q, 3);
    expect(viaFallback.body.provider_used).toBe('tavily');
    expect(tavily.log).toHaveLength(1);
    expect(tavily.log[0].q).not.toMatch(BROKEN_TEXT);
    expect(q.startsWith(tavily.log[0].q)).toBe(true);
  });
});

describe('GET /v1/search: what svc makes of a provider\'s answer', () => {
  test('a title or snippet cut to its cap (500 / 2000 characters) ends in a whole character, never half an emoji', async () => {
    const a = await w.agent();
    brave.hits = [{ title: '😀'.repeat(600), url: 'https://example.com/emoji', snippet: `x${'🔭'.repeat(2100)}` }];
    const res = await search(a.token, 'emoji everywhere', 1);
    expect(res.status).toBe(200);
    const [hit] = res.body.results;
    expect(hit.title).not.toMatch(BROKEN_TEXT);
    expect(hit.snippet).not.toMatch(BROKEN_TEXT);
    // Characters are code points, as svc counts them everywhere (q, notes): 499 emoji and the ellipsis.
    expect([...hit.title]).toHaveLength(500);
    expect(hit.title.endsWith('😀…')).toBe(true);
    expect([...hit.snippet]).toHaveLength(2000);
  });

  test('published_date is null for text that names no day ("Spring 2024", "March 2024"), not an invented 1st of the month', async () => {
    const a = await w.agent();
    const ages = ['Spring 2024', 'March 2024', 'Updated 2024', 'May 2024 UTC', 'January 5, 2024', 'Mon, 15 Jan 2024 10:00:00 GMT', '2 days ago'];
    brave.hits = ages.map((age, i) => ({ title: age, url: `https://example.com/${i}`, snippet: 's', date: null, age }));
    const res = await search(a.token, 'dates', ages.length);
    expect(res.status).toBe(200);
    expect(Object.fromEntries(res.body.results.map((r: any) => [r.title, r.published_date]))).toEqual({
      'Spring 2024': null,
      'March 2024': null,
      'Updated 2024': null,
      'May 2024 UTC': null,
      'January 5, 2024': '2024-01-05T00:00:00.000Z',
      'Mon, 15 Jan 2024 10:00:00 GMT': '2024-01-15T10:00:00.000Z',
      '2 days ago': null,
    });
  });
});
