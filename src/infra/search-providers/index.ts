/** Web search provider adapters: see docs/search-providers.md. */
export * from './types';
export { SearxngProvider, type SearxngOptions } from './searxng';
export { BraveProvider, type BraveOptions } from './brave';
export { TavilyProvider, type TavilyOptions } from './tavily';
export { FallbackSearch, type FallbackSearchOptions, type SearchOutcome, type WebSearch } from './fallback';
export { credibilityScore, scoreResults, scoredResultsJson, sourceOf, normaliseHost, normaliseDomains, type ScoredSearchResult } from './credibility';
export { LruSearchCache, normaliseQuery, searchCacheKey, SEARCH_CACHE_PREFIX, type SearchCache } from './cache';
export { RedisSearchCache, createCacheRedisClient, type RedisSearchCacheOptions } from './redis-cache';
export { CachedSearch, isCachedAnswer, type CachedAnswer, type CachedOutcome } from './cached-search';
export {
  createSearchProvider, createFallbackSearch, createSearchCache, createWebSearch, searchSetupWarnings, webSearchStatus,
  type SearchConfig, type WebSearchStatus, type SearchCacheHandle, type SearchCacheDeps,
} from './factory';
export type { ProviderHttpOptions } from './http';
