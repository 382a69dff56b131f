/**
 * Primary first; if it fails, the fallback answers once (the API's "may answer once"). The
 * fallback is handed in only when the host enabled it and configured its key (see factory.ts).
 * Not failures: an empty result list (a valid answer) and a caller abort (nobody is waiting, so
 * spending a fallback call would be waste).
 * When both fail the error is SEARCH_PROVIDER_TIMEOUT if every attempt timed out, otherwise
 * SEARCH_PROVIDER_ERROR; `attempts` lists both.
 */
import { SearchProviderError, type RawSearchResult, type SearchAttempt, type SearchProvider } from './types';

export interface SearchOutcome {
  /** Fixed name of the provider that answered ('searxng' | 'brave' | 'tavily'). */
  provider_used: string;
  results: RawSearchResult[];
  from: 'primary' | 'fallback';
}

/** What the search module depends on; FallbackSearch and CachedSearch both satisfy it. */
export interface WebSearch {
  search(q: string, numResults: number, signal?: AbortSignal): Promise<SearchOutcome>;
}

export interface FallbackSearchOptions {
  /** null: web search is not configured (503). */
  primary: SearchProvider | null;
  /** null: no fallback (not set, disabled, or its key missing). */
  fallback?: SearchProvider | null;
  /** Name shown in the unconfigured error (the configured primary name, or 'none'). */
  primaryName?: string;
}

/** Any failure as a SearchProviderError (adapters only throw those; this guards third-party ones). */
function asProviderError(err: unknown, provider: string): SearchProviderError {
  if (err instanceof SearchProviderError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  return new SearchProviderError('SEARCH_PROVIDER_ERROR', provider, 'network', `${provider}: ${msg}`, { cause: err });
}

const attemptOf = (e: SearchProviderError): SearchAttempt =>
  ({ provider: e.provider, code: e.code, reason: e.reason, ...(e.status !== undefined ? { status: e.status } : {}) });

export class FallbackSearch implements WebSearch {
  readonly primary: SearchProvider | null;
  readonly fallback: SearchProvider | null;
  private readonly primaryName: string;

  constructor(opts: FallbackSearchOptions) {
    this.primary = opts.primary;
    this.fallback = opts.fallback && opts.primary && opts.fallback.name !== opts.primary.name ? opts.fallback : null;
    this.primaryName = opts.primary?.name ?? opts.primaryName ?? 'none';
  }

  async search(q: string, numResults: number, signal?: AbortSignal): Promise<SearchOutcome> {
    if (!this.primary) {
      throw new SearchProviderError('SEARCH_PROVIDER_UNCONFIGURED', this.primaryName, 'unconfigured',
        this.primaryName === 'none' ? 'no web search provider is configured on this host' : `search provider ${this.primaryName} is not configured (missing key or URL)`);
    }
    let first: SearchProviderError;
    try {
      return { provider_used: this.primary.name, results: await this.primary.search(q, numResults, signal), from: 'primary' };
    } catch (err) {
      first = asProviderError(err, this.primary.name);
    }
    if (first.code === 'SEARCH_ABORTED' || !this.fallback || signal?.aborted) throw first;
    let second: SearchProviderError;
    try {
      return { provider_used: this.fallback.name, results: await this.fallback.search(q, numResults, signal), from: 'fallback' };
    } catch (err) {
      second = asProviderError(err, this.fallback.name);
    }
    if (second.code === 'SEARCH_ABORTED') throw second;
    const attempts = [attemptOf(first), attemptOf(second)];
    const allTimedOut = attempts.every((a) => a.code === 'SEARCH_PROVIDER_TIMEOUT');
    // The sooner of the two providers' own Retry-After (either one would answer again by then).
    const waits = [first.retryAfterSeconds, second.retryAfterSeconds].filter((x): x is number => x !== undefined);
    throw new SearchProviderError(
      allTimedOut ? 'SEARCH_PROVIDER_TIMEOUT' : 'SEARCH_PROVIDER_ERROR',
      second.provider,
      allTimedOut ? 'timeout' : second.code === 'SEARCH_PROVIDER_TIMEOUT' ? first.reason : second.reason,
      `primary ${first.provider} failed (${first.message}); fallback ${second.provider} failed (${second.message})`,
      { status: second.status, attempts, ...(waits.length > 0 ? { retryAfterSeconds: Math.min(...waits) } : {}) },
    );
  }
}
