/**
 * Contract shared by the web search provider adapters (SearXNG, Brave, Tavily), the fallback
 * composition and the cache. Adapters never throw anything but SearchProviderError.
 */
import type { SearchProviderName } from '../../config/search';

export type { SearchProviderName };

/** One hit as every provider is normalised to; `source` and `credibility_score` are added later. */
export interface RawSearchResult {
  title: string;
  /** Absolute http(s) URL; hits without one are dropped. */
  url: string;
  /** Plain text (provider HTML such as Brave's <strong> highlights is stripped). */
  snippet: string;
  /** ISO 8601 UTC (`toISOString()`), or null when the provider gives no absolute date. */
  published_date: string | null;
}

export interface SearchProvider {
  readonly name: SearchProviderName;
  /** At most `numResults` hits (clamped to 1..20); an empty array is a valid answer. */
  search(q: string, numResults: number, signal?: AbortSignal): Promise<RawSearchResult[]>;
}

export type SearchErrorCode =
  /** No usable provider: primary is `none`, or its key/URL is missing. */
  | 'SEARCH_PROVIDER_UNCONFIGURED'
  /** Upstream failed: non-2xx, bad key, rate limit, network error, malformed body. */
  | 'SEARCH_PROVIDER_ERROR'
  /** Upstream did not answer within SVC_SEARCH_TIMEOUT_MS. */
  | 'SEARCH_PROVIDER_TIMEOUT'
  /** The caller's AbortSignal fired (client went away); never retried on the fallback. */
  | 'SEARCH_ABORTED';

/** HTTP status for each code (the module route maps with this). 499: client closed request. */
export const SEARCH_ERROR_HTTP_STATUS: Record<SearchErrorCode, number> = {
  SEARCH_PROVIDER_UNCONFIGURED: 503,
  SEARCH_PROVIDER_ERROR: 502,
  SEARCH_PROVIDER_TIMEOUT: 504,
  SEARCH_ABORTED: 499,
};

/** Finer cause inside SEARCH_PROVIDER_ERROR, for logs and metrics (not part of the API). */
export type SearchErrorReason =
  | 'unconfigured' | 'http_status' | 'auth' | 'rate_limited' | 'quota' | 'network'
  | 'malformed' | 'too_large' | 'upstream_engines' | 'timeout' | 'aborted';

export interface SearchAttempt {
  provider: string;
  code: SearchErrorCode;
  reason: SearchErrorReason;
  status?: number;
}

export class SearchProviderError extends Error {
  override readonly name = 'SearchProviderError';
  readonly code: SearchErrorCode;
  /** Provider that failed (the last one tried, for a combined failure), or 'none'. */
  readonly provider: string;
  readonly reason: SearchErrorReason;
  /** Upstream HTTP status, when there was one. */
  readonly status?: number;
  /** Seconds from an upstream Retry-After header (rate limits). */
  readonly retryAfterSeconds?: number;
  /** Every provider tried, in order (set by FallbackSearch; one entry for a single adapter). */
  readonly attempts: SearchAttempt[];

  constructor(
    code: SearchErrorCode,
    provider: string,
    reason: SearchErrorReason,
    message: string,
    extra: { status?: number; retryAfterSeconds?: number; attempts?: SearchAttempt[]; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.code = code;
    this.provider = provider;
    this.reason = reason;
    if (extra.status !== undefined) this.status = extra.status;
    if (extra.retryAfterSeconds !== undefined) this.retryAfterSeconds = extra.retryAfterSeconds;
    this.attempts = extra.attempts ?? [{ provider, code, reason, ...(extra.status !== undefined ? { status: extra.status } : {}) }];
  }

  get httpStatus(): number {
    return SEARCH_ERROR_HTTP_STATUS[this.code];
  }
}

/** Hard cap on what one provider call may return; providers answer a few KB per query. */
export const MAX_NUM_RESULTS = 20;
export const clampNumResults = (n: number): number =>
  Number.isFinite(n) ? Math.min(MAX_NUM_RESULTS, Math.max(1, Math.trunc(n))) : 10;
