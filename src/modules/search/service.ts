/**
 * GET /v1/search: checks a provider is configured, charges one search call (billing decides
 * 429 SEARCH_CALLS_LIMIT / 402 INSUFFICIENT_CREDITS), asks the cached primary/fallback search,
 * scores the results and gives the call back if no provider answered. A cache hit is a call like
 * any other (the agent asked and got an answer). Provider failures are rendered with the
 * provider layer's own codes (docs/search-providers.md): 503 SEARCH_PROVIDER_UNCONFIGURED,
 * 502 SEARCH_PROVIDER_ERROR, 504 SEARCH_PROVIDER_TIMEOUT; upstream error text is logged, never sent.
 */
import { ApiError } from '../../http/errors';
import { newId } from '../../lib/ids';
import {
  scoredResultsJson, SearchProviderError, type CachedOutcome, type FallbackSearch,
} from '../../infra/search-providers';
import type { SearchUsage } from '../usage/search-usage';
import type { SearchMeter, SearchUsageReader } from './ports';
import { isBlank } from '../../lib/text';

export interface SearchServiceDeps {
  /** `signal`: made only if a provider is asked (not for a cache hit); see CachedSearch. */
  web: { search(q: string, n: number, signal?: () => AbortSignal): Promise<CachedOutcome> };
  fallback: Pick<FallbackSearch, 'primary'>;
  newsDomains: readonly string[];
  /** Why web search is unavailable on this host, naming the settings (infra/search-providers webSearchStatus); shown in the 503. */
  unconfiguredReason?: string | null;
  meter: SearchMeter;
  usage: SearchUsageReader;
  log?: (msg: string, err: unknown) => void;
}

export interface SearchAnswer {
  search_id: string;
  query: string;
  provider_used: string;
  /** The scored results (ScoredSearchResult[]) as JSON, serialised once per cached answer; the route splices it into its answer. */
  resultsJson: string;
  usage: SearchUsage;
  cached: boolean;
  svcUsage: object;
}

const MESSAGES: Record<string, string> = {
  SEARCH_PROVIDER_UNCONFIGURED: 'Web search is not configured on this host (no search provider key or URL)',
  SEARCH_PROVIDER_ERROR: 'The search provider failed and no fallback answered; try again later',
  SEARCH_PROVIDER_TIMEOUT: 'The search provider did not answer in time; try again later',
  SEARCH_ABORTED: 'The search was cancelled',
};

/**
 * A provider's wait is passed on as Retry-After only up to an hour: a longer one is a plan's quota
 * (Brave's monthly window says ~30 days), which the operator fixes, not something an agent should
 * sleep through.
 */
const MAX_PASSED_RETRY_AFTER_SECONDS = 3600;

function toApiError(e: SearchProviderError): ApiError {
  const extra: Record<string, unknown> = { provider: e.provider };
  const headers: Record<string, string> = {};
  if (e.retryAfterSeconds !== undefined && e.retryAfterSeconds <= MAX_PASSED_RETRY_AFTER_SECONDS) headers['retry-after'] = String(e.retryAfterSeconds);
  return new ApiError(e.httpStatus, e.code, MESSAGES[e.code] ?? 'Search failed', extra, headers);
}

const balanceUnitsOf = (usd: string): number | undefined => {
  const m = /^(-?)(\d+)\.(\d{4})$/.exec(usd);
  return m ? (m[1] ? -1 : 1) * (Number(m[2]) * 10_000 + Number(m[3])) : undefined;
};

export function createSearchService(deps: SearchServiceDeps) {
  return {
    async search(caller: { agentId: string; tier: string }, q: string, numResults: number, signal?: () => AbortSignal): Promise<SearchAnswer> {
      if (isBlank(q)) throw new ApiError(422, 'VALIDATION_FAILED', 'q must contain a non-space character', { field: 'querystring.q' });
      if (!deps.fallback.primary) {
        const e = toApiError(new SearchProviderError('SEARCH_PROVIDER_UNCONFIGURED', 'none', 'unconfigured', 'no provider'));
        if (deps.unconfiguredReason) e.message = `Web search is not configured on this host: ${deps.unconfiguredReason}`;
        throw e;
      }
      const charge = await deps.meter.chargeSearch(caller.agentId, caller.tier);
      let out: CachedOutcome;
      try {
        out = await deps.web.search(q, numResults, signal);
      } catch (e) {
        await charge.refund();
        if (e instanceof SearchProviderError) {
          if (e.code !== 'SEARCH_ABORTED') deps.log?.(`search provider failure (${e.code}/${e.reason})`, e);
          throw toApiError(e);
        }
        throw e;
      }
      const usage = await deps.usage.searchUsage(caller.agentId, caller.tier, {
        balanceUnits: balanceUnitsOf(charge.usage.credits_remaining_usd), tierName: charge.tier, counts: charge.poolCounts,
      });
      return {
        search_id: newId(),
        query: q,
        provider_used: out.provider_used,
        resultsJson: scoredResultsJson(out.results, deps.newsDomains),
        usage,
        cached: out.cached,
        svcUsage: charge.usage,
      };
    },
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
