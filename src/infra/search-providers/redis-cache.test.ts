// Redis search cache against the real Redis on 127.0.0.1:6379 (skipped, visibly, when absent).
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startBraveFake, type FakeSearchProvider } from '../../../test/fakes/search-providers';
import { loadGroup } from '../../config/define';
import { searchSettings } from '../../config/search';
import { ManualClock } from '../../lib/clock';
import { searchCacheKey } from './cache';
import { isCachedAnswer, type CachedAnswer } from './cached-search';
import { createWebSearch } from './factory';
import { createCacheRedisClient, RedisSearchCache } from './redis-cache';

const REDIS_URL = process.env.SVC_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function reachable(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

const up = await reachable();
if (!up) console.warn(`\n  !! SKIPPED redis-cache tests: no Redis at ${REDIS_URL}\n`);

async function ready(r: Redis): Promise<Redis> {
  if (r.status !== 'ready') await new Promise<void>((resolve, reject) => { r.once('ready', resolve); r.once('end', () => reject(new Error('redis ended'))); });
  return r;
}

describe.skipIf(!up)('RedisSearchCache', () => {
  const prefix = `svc:test:search:${randomUUID()}:`;
  let a: Redis;
  let b: Redis;
  beforeAll(async () => {
    a = await ready(createCacheRedisClient(REDIS_URL));
    b = await ready(createCacheRedisClient(REDIS_URL));
  });
  afterAll(async () => {
    const keys = await a.keys(`${prefix}*`);
    if (keys.length) await a.del(...keys);
    await Promise.all([a.quit(), b.quit()]);
  });

  const answer: CachedAnswer = { provider_used: 'brave', results: [{ title: 't', url: 'https://x.example/', snippet: 's', published_date: null }] };

  test('a value written by one instance is read by another, with the TTL set in Redis', async () => {
    const writer = new RedisSearchCache<CachedAnswer>(a);
    const reader = new RedisSearchCache<CachedAnswer>(b, { validate: isCachedAnswer });
    await writer.set(`${prefix}k1`, answer, 120);
    expect(await reader.get(`${prefix}k1`)).toEqual(answer);
    const pttl = await a.pttl(`${prefix}k1`);
    expect(pttl).toBeGreaterThan(110_000);
    expect(pttl).toBeLessThanOrEqual(120_000);
    expect(await reader.get(`${prefix}missing`)).toBeUndefined();
  });

  test('an entry disappears when its TTL runs out', async () => {
    const c = new RedisSearchCache<CachedAnswer>(a);
    await c.set(`${prefix}short`, answer, 1);
    expect(await c.get(`${prefix}short`)).toEqual(answer);
    await new Promise((r) => setTimeout(r, 1100));
    expect(await c.get(`${prefix}short`)).toBeUndefined();
  });

  test('garbage in Redis is a miss, not an exception', async () => {
    const errors: unknown[] = [];
    const c = new RedisSearchCache<CachedAnswer>(a, { validate: isCachedAnswer, onError: (e) => errors.push(e) });
    await a.set(`${prefix}bad-json`, '{not json', 'EX', 60);
    await a.set(`${prefix}bad-shape`, JSON.stringify({ provider_used: 1 }), 'EX', 60);
    expect(await c.get(`${prefix}bad-json`)).toBeUndefined();
    expect(await c.get(`${prefix}bad-shape`)).toBeUndefined();
    expect(errors).toHaveLength(1); // the JSON parse error is reported; a shape mismatch is just a miss
  });

  test('Redis unreachable: get is a miss and set is skipped, quickly, with the error reported', async () => {
    const dead = createCacheRedisClient('redis://127.0.0.1:1');
    dead.on('error', () => {});
    const errors: unknown[] = [];
    const c = new RedisSearchCache<CachedAnswer>(dead, { onError: (e) => errors.push(e) });
    const t0 = performance.now();
    expect(await c.get(`${prefix}x`)).toBeUndefined();
    await c.set(`${prefix}x`, answer, 60);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(errors).toHaveLength(2);
    dead.disconnect();
  });
});

describe.skipIf(!up)('search answers shared by two instances through Redis', () => {
  let fake: FakeSearchProvider;
  beforeAll(async () => { fake = await startBraveFake(); });
  afterAll(() => fake.close());

  test('instance B answers from the cache instance A filled; the provider is called once', async () => {
    const search = loadGroup(searchSettings, {
      SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_URL: fake.url, SVC_BRAVE_API_KEY: fake.apiKey!, SVC_SEARCH_CACHE_TTL_SECONDS: '60',
    }, []);
    const config = { core: { redisUrl: REDIS_URL }, search };
    const q = `shared ${randomUUID()}`;
    const [instA, instB] = [createWebSearch(config, { clock: new ManualClock() }), createWebSearch(config, { clock: new ManualClock() })];
    try {
      expect([instA.cache.kind, instB.cache.kind]).toEqual(['redis', 'redis']);
      expect(await Promise.all([instA.cache.ready(), instB.cache.ready()])).toEqual([true, true]);
      const probe = new Redis(REDIS_URL);
      const first = await instA.search.search(q, 4);
      const second = await instB.search.search(q, 4);
      expect([first.cached, second.cached, second.provider_used]).toEqual([false, true, 'brave']);
      expect(second.results).toEqual(first.results);
      expect(fake.requests).toBe(1);
      await probe.del(searchCacheKey('brave', q, 4));
      await probe.quit();
    } finally {
      await Promise.all([instA.cache.close(), instB.cache.close()]);
    }
  });
});
