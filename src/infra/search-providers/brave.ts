/**
 * Brave Search API: GET {base}/res/v1/web/search?q=&count= with X-Subscription-Token.
 * Response: { type: 'search', web?: { results: [{ title, url, description, page_age?, age? }] } };
 * `web` is absent when nothing was found. Errors: { type: 'ErrorResponse', error: { status, code,
 * detail } }; an invalid token is HTTP 422 with code SUBSCRIPTION_TOKEN_INVALID (not 401), rate
 * limits are 429 RATE_LIMITED. `description` carries <strong> highlights, stripped here.
 * `page_age` is an ISO date without a zone; `age` is either a date ("January 5, 2024") or a
 * relative phrase ("2 days ago", which gives null).
 */
import { callJson, type ProviderHttpOptions } from './http';
import { capQuery, finalize, isObject } from './normalize';
import { clampNumResults, SearchProviderError, type RawSearchResult, type SearchErrorReason, type SearchProvider } from './types';

export interface BraveOptions extends ProviderHttpOptions {
  baseUrl: string;
  apiKey: string;
}

function classify(status: number, body: unknown): { reason?: SearchErrorReason; detail?: string } | undefined {
  const err = isObject(body) && isObject(body.error) ? body.error : undefined;
  if (!err) return undefined;
  const code = typeof err.code === 'string' ? err.code : '';
  const detail = [code, typeof err.detail === 'string' ? err.detail : ''].filter(Boolean).join(' ');
  if (code === 'SUBSCRIPTION_TOKEN_INVALID' || code === 'SUBSCRIPTION_NOT_FOUND') return { reason: 'auth', detail };
  if (code === 'RATE_LIMITED') return { reason: 'rate_limited', detail };
  if (code.includes('QUOTA')) return { reason: 'quota', detail };
  return { detail };
}

export class BraveProvider implements SearchProvider {
  readonly name = 'brave' as const;
  constructor(private readonly opts: BraveOptions) {}

  async search(q: string, numResults: number, signal?: AbortSignal): Promise<RawSearchResult[]> {
    const n = clampNumResults(numResults);
    const url = new URL(`${this.opts.baseUrl.replace(/\/+$/, '')}/res/v1/web/search`);
    url.searchParams.set('q', capQuery(q, 400, 50));
    url.searchParams.set('count', String(n));
    const body = await callJson({
      provider: this.name,
      method: 'GET',
      url: url.href,
      headers: { accept: 'application/json', 'x-subscription-token': this.opts.apiKey },
      classify,
    }, this.opts, signal);
    if (!isObject(body)) throw new SearchProviderError('SEARCH_PROVIDER_ERROR', this.name, 'malformed', 'brave answer is not a JSON object');
    if (body.web === undefined || body.web === null) return [];
    if (!isObject(body.web) || !Array.isArray(body.web.results)) {
      throw new SearchProviderError('SEARCH_PROVIDER_ERROR', this.name, 'malformed', 'brave answer has no web.results array');
    }
    return finalize(
      body.web.results.filter(isObject).map((r) => ({ title: r.title, url: r.url, snippet: r.description, date: r.page_age ?? r.age })),
      n,
    );
  }
}
