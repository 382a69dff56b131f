/**
 * Builds the search adapters from settings (src/config/search.ts). A provider counts as
 * configured when its key (Brave, Tavily) or URL (SearXNG) is set. The fallback is wired only
 * when SVC_SEARCH_FALLBACK names a configured provider other than the primary and
 * SVC_SEARCH_FALLBACK_ENABLED is true. Nothing here throws for a missing key: an unconfigured
 * primary answers 503 SEARCH_PROVIDER_UNCONFIGURED per request, and searchSetupWarnings() says
 * why at start-up. Only an impossible cache choice (SVC_SEARCH_CACHE=redis without REDIS_URL)
 * stops start-up.
 */
import type { Redis } from 'ioredis';
import type { Dispatcher } from 'undici';
import { ConfigError, type Loaded } from '../../config/define';
import type { searchSettings, SearchProviderName } from '../../config/search';
import type { Clock } from '../../lib/clock';
import { BraveProvider } from './brave';
import { LruSearchCache, type SearchCache } from './cache';
import { CachedSearch, isCachedAnswer, type CachedAnswer } from './cached-search';
import { FallbackSearch } from './fallback';
import { createCacheRedisClient, RedisSearchCache } from './redis-cache';
import { SearxngProvider } from './searxng';
import { TavilyProvider } from './tavily';
import type { SearchProvider } from './types';

export type SearchConfig = Loaded<typeof searchSettings.settings>;

const ENV_OF: Record<SearchProviderName, string> = {
  searxng: 'SVC_SEARXNG_URL',
  brave: 'SVC_BRAVE_API_KEY',
  tavily: 'SVC_TAVILY_API_KEY',
};

/** The adapter for `name`, or null when its key/URL is missing. */
export function createSearchProvider(name: SearchProviderName, cfg: SearchConfig, dispatcher?: Dispatcher): SearchProvider | null {
  const http = { timeoutMs: cfg.timeoutMs, dispatcher };
  switch (name) {
    case 'searxng':
      return cfg.searxngUrl ? new SearxngProvider({ ...http, baseUrl: cfg.searxngUrl }) : null;
    case 'brave':
      return cfg.braveApiKey ? new BraveProvider({ ...http, baseUrl: cfg.braveUrl, apiKey: cfg.braveApiKey }) : null;
    case 'tavily':
      return cfg.tavilyApiKey ? new TavilyProvider({ ...http, baseUrl: cfg.tavilyUrl, apiKey: cfg.tavilyApiKey }) : null;
  }
}

export function createFallbackSearch(cfg: SearchConfig, dispatcher?: Dispatcher): FallbackSearch {
  const primary = cfg.primary === 'none' ? null : createSearchProvider(cfg.primary, cfg, dispatcher);
  const useFallback = cfg.fallbackEnabled && cfg.fallback !== 'none' && cfg.fallback !== cfg.primary;
  const fallback = useFallback && cfg.fallback !== 'none' ? createSearchProvider(cfg.fallback, cfg, dispatcher) : null;
  return new FallbackSearch({ primary, fallback, primaryName: cfg.primary });
}

/** Whether web search works on this host, and if not, why and which setting turns it on. */
export interface WebSearchStatus {
  available: boolean;
  /** The provider that answers first (null: none configured). */
  primary: SearchProviderName | null;
  /** The provider that answers when the primary fails (null: none). */
  fallback: SearchProviderName | null;
  /** Why web search is unavailable, naming the settings an operator sets; null when available. */
  reason: string | null;
}

export function webSearchStatus(cfg: SearchConfig): WebSearchStatus {
  const settings = 'SVC_SEARCH_PRIMARY (searxng, brave or tavily) and its URL or key (SVC_SEARXNG_URL, SVC_BRAVE_API_KEY or SVC_TAVILY_API_KEY)';
  if (cfg.primary === 'none') return { available: false, primary: null, fallback: null, reason: `no web search provider is configured on this host; the operator sets ${settings}` };
  if (!createSearchProvider(cfg.primary, cfg)) {
    return { available: false, primary: null, fallback: null, reason: `SVC_SEARCH_PRIMARY is ${cfg.primary} but ${ENV_OF[cfg.primary]} is not set on this host` };
  }
  const fallback = createFallbackSearch(cfg).fallback?.name as SearchProviderName | undefined;
  return { available: true, primary: cfg.primary, fallback: fallback ?? null, reason: null };
}

/** Human-readable reasons why the configured search will not behave as the operator may expect. */
export function searchSetupWarnings(cfg: SearchConfig): string[] {
  const out: string[] = [];
  if (cfg.primary === 'none') out.push('SVC_SEARCH_PRIMARY is none: GET /v1/search answers 503 SEARCH_PROVIDER_UNCONFIGURED');
  else if (!createSearchProvider(cfg.primary, cfg)) out.push(`SVC_SEARCH_PRIMARY=${cfg.primary} but ${ENV_OF[cfg.primary]} is not set: search answers 503 SEARCH_PROVIDER_UNCONFIGURED`);
  if (cfg.fallback !== 'none') {
    if (cfg.fallback === cfg.primary) out.push(`SVC_SEARCH_FALLBACK equals the primary (${cfg.primary}); no fallback is used`);
    else if (!cfg.fallbackEnabled) out.push('SVC_SEARCH_FALLBACK_ENABLED is false; the fallback provider is not used');
    else if (!createSearchProvider(cfg.fallback, cfg)) out.push(`SVC_SEARCH_FALLBACK=${cfg.fallback} but ${ENV_OF[cfg.fallback]} is not set; no fallback is used`);
  }
  return out;
}

export interface SearchCacheHandle {
  cache: SearchCache<CachedAnswer> | null;
  kind: 'memory' | 'redis' | 'off';
  /** Closes the Redis connection this factory opened (never one passed in). */
  close(): Promise<void>;
  /**
   * Resolves true once the cache can serve (at once for memory/off; Redis: connected), false
   * after timeoutMs. Optional to await: until Redis is up every lookup is simply a miss.
   */
  ready(timeoutMs?: number): Promise<boolean>;
}

function redisReady(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => { clearTimeout(timer); redis.off('ready', onReady); resolve(ok); };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.on('ready', onReady);
  });
}

export interface SearchCacheDeps {
  clock: Clock;
  /** A shared ioredis client; when absent and Redis is chosen, one is opened from REDIS_URL. */
  redis?: Redis;
  onError?: (err: unknown) => void;
}

export function createSearchCache(config: { core: { redisUrl?: string }; search: SearchConfig }, deps: SearchCacheDeps): SearchCacheHandle {
  const { cache: choice, cacheMaxEntries } = config.search;
  const redisUrl = config.core.redisUrl;
  const always = async () => true;
  if (choice === 'off') return { cache: null, kind: 'off', close: async () => {}, ready: always };
  if (choice === 'redis' && !redisUrl && !deps.redis) throw new ConfigError(['SVC_SEARCH_CACHE=redis needs REDIS_URL']);
  if (choice === 'memory' || (choice === 'auto' && !redisUrl && !deps.redis)) {
    return { cache: new LruSearchCache<CachedAnswer>(cacheMaxEntries, deps.clock), kind: 'memory', close: async () => {}, ready: always };
  }
  const owned = deps.redis ? null : createCacheRedisClient(redisUrl!);
  const redis = deps.redis ?? owned!;
  if (owned && deps.onError) owned.on('error', deps.onError);
  else if (owned) owned.on('error', () => {}); // reconnects on its own; failed commands reach onError per call
  return {
    cache: new RedisSearchCache<CachedAnswer>(redis, { onError: deps.onError, validate: isCachedAnswer }),
    kind: 'redis',
    close: async () => {
      if (owned) await owned.quit().catch(() => owned.disconnect());
    },
    ready: (timeoutMs = 2000) => redisReady(redis, timeoutMs),
  };
}

/** The whole search stack the module needs: providers, fallback and cache. */
export function createWebSearch(
  config: { core: { redisUrl?: string }; search: SearchConfig },
  deps: SearchCacheDeps & { dispatcher?: Dispatcher },
): { search: CachedSearch; fallback: FallbackSearch; cache: SearchCacheHandle } {
  const fallback = createFallbackSearch(config.search, deps.dispatcher);
  const cache = createSearchCache(config, deps);
  return { search: new CachedSearch(fallback, cache.cache, config.search.cacheTtlSeconds), fallback, cache };
}
