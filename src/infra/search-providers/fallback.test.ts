// Primary-then-fallback over the real clients and fakes, and how settings wire it.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startBraveFake, startSearxngFake, startTavilyFake, type FakeSearchProvider } from '../../../test/fakes/search-providers';
import { loadGroup } from '../../config/define';
import { searchSettings } from '../../config/search';
import { BraveProvider } from './brave';
import { FallbackSearch } from './fallback';
import { createFallbackSearch, searchSetupWarnings, type SearchConfig } from './factory';
import { TavilyProvider } from './tavily';
import { SearchProviderError } from './types';

let brave: FakeSearchProvider;
let tavily: FakeSearchProvider;
let searxng: FakeSearchProvider;
beforeAll(async () => {
  [brave, tavily, searxng] = await Promise.all([startBraveFake(), startTavilyFake(), startSearxngFake()]);
});
afterAll(() => Promise.all([brave.close(), tavily.close(), searxng.close()]));
beforeEach(() => { brave.reset(); tavily.reset(); searxng.reset(); });

const braveP = (timeoutMs = 2000) => new BraveProvider({ baseUrl: brave.url, apiKey: brave.apiKey!, timeoutMs });
const tavilyP = (timeoutMs = 2000) => new TavilyProvider({ baseUrl: tavily.url, apiKey: tavily.apiKey!, timeoutMs });

async function failure(p: Promise<unknown>): Promise<SearchProviderError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(SearchProviderError);
  return err as SearchProviderError;
}

describe('FallbackSearch', () => {
  test('a healthy primary answers; the fallback is not called', async () => {
    const out = await new FallbackSearch({ primary: braveP(), fallback: tavilyP() }).search('q', 3);
    expect(out.provider_used).toBe('brave');
    expect(out.from).toBe('primary');
    expect(out.results).toHaveLength(3);
    expect([brave.requests, tavily.requests]).toEqual([1, 0]);
  });

  test.each(['http500', 'http429', 'malformed', 'hang'] as const)('primary %s: the fallback answers, once', async (mode) => {
    brave.mode = mode;
    const out = await new FallbackSearch({ primary: braveP(200), fallback: tavilyP() }).search('q', 4);
    expect([out.provider_used, out.from, out.results.length]).toEqual(['tavily', 'fallback', 4]);
    expect([brave.requests, tavily.requests]).toEqual([1, 1]);
  });

  test('primary with a wrong key: the fallback answers', async () => {
    const bad = new BraveProvider({ baseUrl: brave.url, apiKey: 'nope', timeoutMs: 2000 });
    const out = await new FallbackSearch({ primary: bad, fallback: tavilyP() }).search('q', 2);
    expect(out.from).toBe('fallback');
  });

  test('an empty primary answer is an answer: no fallback', async () => {
    brave.mode = 'empty';
    const out = await new FallbackSearch({ primary: braveP(), fallback: tavilyP() }).search('q', 2);
    expect([out.provider_used, out.from, out.results]).toEqual(['brave', 'primary', []]);
    expect(tavily.requests).toBe(0);
  });

  test('no fallback: the primary error passes through unchanged', async () => {
    brave.mode = 'http500';
    const e = await failure(new FallbackSearch({ primary: braveP(), fallback: null }).search('q', 2));
    expect([e.code, e.provider, e.status, e.attempts.length]).toEqual(['SEARCH_PROVIDER_ERROR', 'brave', 500, 1]);
  });

  test('both fail: SEARCH_PROVIDER_ERROR (502) listing both attempts; the fallback is tried once only', async () => {
    brave.mode = 'http500';
    tavily.mode = 'http429';
    const e = await failure(new FallbackSearch({ primary: braveP(), fallback: tavilyP() }).search('q', 2));
    expect([e.code, e.httpStatus, e.provider]).toEqual(['SEARCH_PROVIDER_ERROR', 502, 'tavily']);
    expect(e.attempts).toEqual([
      { provider: 'brave', code: 'SEARCH_PROVIDER_ERROR', reason: 'http_status', status: 500 },
      { provider: 'tavily', code: 'SEARCH_PROVIDER_ERROR', reason: 'rate_limited', status: 429 },
    ]);
    expect([brave.requests, tavily.requests]).toEqual([1, 1]);
  });

  test('both time out: SEARCH_PROVIDER_TIMEOUT (504); one timeout and one error: 502', async () => {
    brave.mode = 'hang';
    tavily.mode = 'hang';
    const both = await failure(new FallbackSearch({ primary: braveP(150), fallback: tavilyP(150) }).search('q', 2));
    expect([both.code, both.httpStatus]).toEqual(['SEARCH_PROVIDER_TIMEOUT', 504]);
    tavily.mode = 'http500';
    const mixed = await failure(new FallbackSearch({ primary: braveP(150), fallback: tavilyP(150) }).search('q', 2));
    expect([mixed.code, mixed.reason, mixed.httpStatus]).toEqual(['SEARCH_PROVIDER_ERROR', 'http_status', 502]);
  });

  test('no primary: SEARCH_PROVIDER_UNCONFIGURED (503) and no provider is called', async () => {
    const e = await failure(new FallbackSearch({ primary: null, fallback: tavilyP(), primaryName: 'brave' }).search('q', 2));
    expect([e.code, e.httpStatus, e.provider]).toEqual(['SEARCH_PROVIDER_UNCONFIGURED', 503, 'brave']);
    expect(tavily.requests).toBe(0);
  });

  test('a caller abort is not retried on the fallback', async () => {
    brave.mode = 'hang';
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const e = await failure(new FallbackSearch({ primary: braveP(), fallback: tavilyP() }).search('q', 2, ac.signal));
    expect(e.code).toBe('SEARCH_ABORTED');
    expect(tavily.requests).toBe(0);
  });

  test('a fallback equal to the primary is ignored', () => {
    expect(new FallbackSearch({ primary: braveP(), fallback: braveP() }).fallback).toBeNull();
  });
});

describe('wiring from settings', () => {
  const cfg = (env: Record<string, string>): SearchConfig => {
    const problems: string[] = [];
    const c = loadGroup(searchSettings, env, problems);
    expect(problems).toEqual([]);
    return c;
  };
  const keys = () => ({
    SVC_BRAVE_URL: brave.url, SVC_BRAVE_API_KEY: brave.apiKey!, SVC_TAVILY_URL: tavily.url, SVC_TAVILY_API_KEY: tavily.apiKey!,
    SVC_SEARXNG_URL: searxng.url, SVC_SEARCH_TIMEOUT_MS: '2000',
  });

  test('defaults: no provider, so 503', async () => {
    const c = cfg({});
    expect([c.primary, c.fallback, c.fallbackEnabled, c.braveUrl, c.tavilyUrl]).toEqual(['none', 'none', true, 'https://api.search.brave.com', 'https://api.tavily.com']);
    const e = await failure(createFallbackSearch(c).search('q', 1));
    expect([e.code, e.provider]).toEqual(['SEARCH_PROVIDER_UNCONFIGURED', 'none']);
    expect(searchSetupWarnings(c)).toHaveLength(1);
  });

  test('primary without its key is unconfigured, even with a working fallback', async () => {
    const c = cfg({ ...keys(), SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: '', SVC_SEARCH_FALLBACK: 'tavily' });
    const e = await failure(createFallbackSearch(c).search('q', 1));
    expect([e.code, e.provider]).toEqual(['SEARCH_PROVIDER_UNCONFIGURED', 'brave']);
    expect(searchSetupWarnings(c).join()).toContain('SVC_BRAVE_API_KEY');
  });

  test('fallback used only when enabled and its key is set', async () => {
    searxng.mode = 'http500';
    const on = createFallbackSearch(cfg({ ...keys(), SVC_SEARCH_PRIMARY: 'searxng', SVC_SEARCH_FALLBACK: 'brave' }));
    expect((await on.search('q', 2)).provider_used).toBe('brave');
    const off = createFallbackSearch(cfg({ ...keys(), SVC_SEARCH_PRIMARY: 'searxng', SVC_SEARCH_FALLBACK: 'brave', SVC_SEARCH_FALLBACK_ENABLED: 'false' }));
    expect(off.fallback).toBeNull();
    expect((await failure(off.search('q', 2))).provider).toBe('searxng');
    const noKey = cfg({ ...keys(), SVC_SEARCH_PRIMARY: 'searxng', SVC_SEARCH_FALLBACK: 'tavily', SVC_TAVILY_API_KEY: '' });
    expect(createFallbackSearch(noKey).fallback).toBeNull();
    expect(searchSetupWarnings(noKey).join()).toContain('SVC_TAVILY_API_KEY');
  });

  test('bad values are reported by the settings layer', () => {
    const problems: string[] = [];
    loadGroup(searchSettings, { SVC_SEARCH_PRIMARY: 'google', SVC_BRAVE_URL: 'ftp://x', SVC_SEARCH_TIMEOUT_MS: '5' }, problems);
    expect(problems).toHaveLength(3);
  });

  test('news domains: default list, or the operator list', () => {
    expect(cfg({}).newsDomains.length).toBeGreaterThanOrEqual(25);
    expect(cfg({ SVC_NEWS_DOMAINS: 'a.example, b.example' }).newsDomains).toEqual(['a.example', 'b.example']);
  });
});
