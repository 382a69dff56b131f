/**
 * Brave Search API: GET {base}/res/v1/web/search?q=&count= with X-Subscription-Token.
 * Response: { type: 'search', web?: { results: [{ title, url, description, page_age?, age? }] } };
 * `web` is absent when nothing was found. Errors: { type: 'ErrorResponse', error: { status, code,
 * detail } } (the API reference's examples show the same object inside an `errors` array; both are
 * read). An invalid token is HTTP 422 SUBSCRIPTION_TOKEN_INVALID (not 401), an unknown
 * subscription 404 SUBSCRIPTION_NOT_FOUND; the per-second rate limit is 429 RATE_LIMITED and the
 * monthly quota 429 QUOTA_LIMITED. Brave documents no Retry-After: its limits come in
 * X-RateLimit-Limit / -Remaining / -Reset, one comma-separated value per window ("1, 15000":
 * per second, per month), and the wait is read from the Reset of the exhausted window(s).
 * `description` carries <strong> highlights, stripped here. `page_age` is an ISO date without a
 * zone; `age` is either a date ("January 5, 2024") or a relative phrase ("2 days ago": null).
 */
import { callJson, type ErrorReading, type ProviderHttpOptions, type ResponseHeaders } from './http';
import { capQuery, finalize, isObject } from './normalize';
import { clampNumResults, SearchProviderError, type RawSearchResult, type SearchProvider } from './types';

export interface BraveOptions extends ProviderHttpOptions {
  baseUrl: string;
  apiKey: string;
}

function headerValues(headers: ResponseHeaders, name: string): number[] | undefined {
  const raw = headers[name];
  const v = Array.isArray(raw) ? raw.join(',') : raw;
  if (typeof v !== 'string' || v.trim() === '') return undefined;
  const parts = v.split(',').map((p) => p.trim());
  return parts.every((p) => /^\d+$/.test(p)) ? parts.map(Number) : undefined;
}

/**
 * Seconds until every exhausted window (X-RateLimit-Remaining 0) has reset, from X-RateLimit-Reset;
 * undefined when the headers are missing, malformed or show no exhausted window.
 */
export function braveRetryAfter(headers: ResponseHeaders): number | undefined {
  const reset = headerValues(headers, 'x-ratelimit-reset');
  const remaining = headerValues(headers, 'x-ratelimit-remaining');
  if (!reset || !remaining || reset.length !== remaining.length) return undefined;
  const waits = reset.filter((_, i) => remaining[i] === 0);
  return waits.length > 0 ? Math.max(...waits) : undefined;
}

function classify(status: number, body: unknown, headers: ResponseHeaders): ErrorReading | undefined {
  const retryAfterSeconds = status === 429 ? braveRetryAfter(headers) : undefined;
  const first = isObject(body) && Array.isArray(body.errors) ? body.errors[0] : undefined;
  const err = isObject(body) && isObject(body.error) ? body.error : isObject(first) ? first : undefined;
  if (!err) return { retryAfterSeconds };
  const code = typeof err.code === 'string' ? err.code : '';
  const detail = [code, typeof err.detail === 'string' ? err.detail : ''].filter(Boolean).join(' ');
  if (code === 'SUBSCRIPTION_TOKEN_INVALID' || code === 'SUBSCRIPTION_NOT_FOUND') return { reason: 'auth', detail };
  if (code === 'RATE_LIMITED') return { reason: 'rate_limited', detail, retryAfterSeconds };
  if (code.includes('QUOTA')) return { reason: 'quota', detail, retryAfterSeconds };
  return { detail, retryAfterSeconds };
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
