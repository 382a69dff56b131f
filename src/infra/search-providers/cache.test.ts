// In-process LRU cache, cache keys, and the cache in front of the providers (cached: true).
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startBraveFake, startTavilyFake, type FakeSearchProvider } from '../../../test/fakes/search-providers';
import { loadGroup } from '../../config/define';
import { searchSettings } from '../../config/search';
import { ManualClock } from '../../lib/clock';
import { BraveProvider } from './brave';
import { LruSearchCache, normaliseQuery, searchCacheKey } from './cache';
import { CachedSearch, type CachedAnswer } from './cached-search';
import { createSearchCache } from './factory';
import { FallbackSearch } from './fallback';
import { TavilyProvider } from './tavily';

describe('LruSearchCache', () => {
  test('expires entries by the clock', async () => {
    const clock = new ManualClock();
    const c = new LruSearchCache<string>(10, clock);
    await c.set('k', 'v', 60);
    clock.advanceSeconds(59);
    expect(await c.get('k')).toBe('v');
    clock.advanceSeconds(1);
    expect(await c.get('k')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  test('evicts the least recently used entry; a read counts as use', async () => {
    const c = new LruSearchCache<number>(2, new ManualClock());
    await c.set('a', 1, 60);
    await c.set('b', 2, 60);
    expect(await c.get('a')).toBe(1); // b is now the oldest
    await c.set('c', 3, 60);
    expect([await c.get('a'), await c.get('b'), await c.get('c')]).toEqual([1, undefined, 3]);
  });

  test('overwriting refreshes value and ttl; ttl <= 0 stores nothing', async () => {
    const clock = new ManualClock();
    const c = new LruSearchCache<number>(2, clock);
    await c.set('a', 1, 10);
    clock.advanceSeconds(9);
    await c.set('a', 2, 10);
    clock.advanceSeconds(9);
    expect(await c.get('a')).toBe(2);
    await c.set('z', 1, 0);
    expect(await c.get('z')).toBeUndefined();
  });
});

describe('cache keys', () => {
  test('normalise case, spacing and Unicode forms; num_results and provider matter', () => {
    expect(normaliseQuery('  Rust\tASYNC  runtime ')).toBe('rust async runtime');
    expect(searchCacheKey('brave', 'Ｒust async', 5)).toBe(searchCacheKey('brave', 'rust   async', 5));
    expect(searchCacheKey('brave', 'rust', 5)).not.toBe(searchCacheKey('brave', 'rust', 6));
    expect(searchCacheKey('brave', 'rust', 5)).not.toBe(searchCacheKey('tavily', 'rust', 5));
    expect(searchCacheKey('brave', 'rust', 5)).toMatch(/^svc:search:v1:brave:[0-9a-f]{64}$/);
  });
});

describe('CachedSearch', () => {
  let brave: FakeSearchProvider;
  let tavily: FakeSearchProvider;
  beforeAll(async () => { [brave, tavily] = await Promise.all([startBraveFake(), startTavilyFake()]); });
  afterAll(() => Promise.all([brave.close(), tavily.close()]));
  beforeEach(() => { brave.reset(); tavily.reset(); });

  const stack = (clock = new ManualClock()) => {
    const fb = new FallbackSearch({
      primary: new BraveProvider({ baseUrl: brave.url, apiKey: brave.apiKey!, timeoutMs: 2000 }),
      fallback: new TavilyProvider({ baseUrl: tavily.url, apiKey: tavily.apiKey!, timeoutMs: 2000 }),
    });
    return { clock, search: new CachedSearch(fb, new LruSearchCache<CachedAnswer>(100, clock), 300) };
  };

  test('a primary answer is reused for the same (query, num_results) until the TTL ends', async () => {
    const { clock, search } = stack();
    const first = await search.search('Node streams', 5);
    const again = await search.search('  node   STREAMS ', 5);
    expect([first.cached, again.cached, again.provider_used, again.from]).toEqual([false, true, 'brave', 'primary']);
    expect(again.results).toEqual(first.results);
    expect(brave.requests).toBe(1);
    await search.search('node streams', 6);
    expect(brave.requests).toBe(2);
    clock.advanceSeconds(300);
    expect((await search.search('node streams', 5)).cached).toBe(false);
    expect(brave.requests).toBe(3);
  });

  test('fallback answers are never cached', async () => {
    const { search } = stack();
    brave.mode = 'http500';
    const a = await search.search('q', 3);
    const b = await search.search('q', 3);
    expect([a.from, a.cached, b.from, b.cached]).toEqual(['fallback', false, 'fallback', false]);
    expect(tavily.requests).toBe(2);
    brave.mode = 'ok';
    expect((await search.search('q', 3)).from).toBe('primary'); // primary back, and it is asked
  });

  test('errors are not cached', async () => {
    const { search } = stack();
    brave.mode = 'http500';
    tavily.mode = 'http500';
    await expect(search.search('q', 3)).rejects.toMatchObject({ code: 'SEARCH_PROVIDER_ERROR' });
    brave.mode = 'ok';
    expect((await search.search('q', 3)).cached).toBe(false);
  });
});

describe('createSearchCache', () => {
  const cfg = (env: Record<string, string>) => loadGroup(searchSettings, env, []);
  const clock = new ManualClock();
  test('auto is in-process without REDIS_URL; off is none; redis without a URL refuses to start', async () => {
    expect(createSearchCache({ core: {}, search: cfg({}) }, { clock }).kind).toBe('memory');
    expect(createSearchCache({ core: {}, search: cfg({ SVC_SEARCH_CACHE: 'off' }) }, { clock }).cache).toBeNull();
    expect(() => createSearchCache({ core: {}, search: cfg({ SVC_SEARCH_CACHE: 'redis' }) }, { clock })).toThrow(/REDIS_URL/);
    const r = createSearchCache({ core: { redisUrl: 'redis://127.0.0.1:6379' }, search: cfg({ SVC_SEARCH_CACHE: 'memory' }) }, { clock });
    expect(r.kind).toBe('memory');
  });
});
