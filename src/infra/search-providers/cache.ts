/**
 * Cache of primary-provider answers, keyed by (provider, normalised query, num_results).
 * Normalising: Unicode NFKC, trimmed, inner whitespace collapsed, lower-cased (providers match
 * case-insensitively). The key carries the provider name, so switching SVC_SEARCH_PRIMARY never
 * serves an answer labelled with the old provider, and a version, so a shape change never reads
 * old entries. The query is hashed to keep Redis keys short and free of user bytes.
 * A cache never throws: a broken cache is a miss (see RedisSearchCache).
 */
import { sha256hex } from '../../lib/hash';
import type { Clock } from '../../lib/clock';

export interface SearchCache<T> {
  get(key: string): Promise<T | undefined>;
  set(key: string, value: T, ttlSeconds: number): Promise<void>;
}

export const SEARCH_CACHE_PREFIX = 'svc:search:v1:';

export function normaliseQuery(q: string): string {
  return q.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();
}

export function searchCacheKey(provider: string, q: string, numResults: number): string {
  const digest = sha256hex(JSON.stringify([normaliseQuery(q), numResults]));
  return `${SEARCH_CACHE_PREFIX}${provider}:${digest}`;
}

/** In-process LRU with per-entry expiry; a Map keeps insertion order, so the first key is the oldest. */
export class LruSearchCache<T> implements SearchCache<T> {
  private readonly entries = new Map<string, { value: T; expiresAt: number }>();

  constructor(private readonly maxEntries: number, private readonly clock: Clock) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError('maxEntries must be a positive integer');
  }

  get size(): number {
    return this.entries.size;
  }

  async get(key: string): Promise<T | undefined> {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    if (e.expiresAt <= this.clock.now()) return undefined;
    this.entries.set(key, e); // most recently used goes to the end
    return e.value;
  }

  async set(key: string, value: T, ttlSeconds: number): Promise<void> {
    if (!(ttlSeconds > 0)) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.clock.now() + ttlSeconds * 1000 });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }
}
