/**
 * Tavily: POST {base}/search with Authorization: Bearer tvly-... (the current scheme; the key in
 * the body as `api_key` is the legacy one) and JSON { query, max_results, search_depth, topic,
 * include_answer, include_raw_content, include_images }. Response: { query, results: [{ title,
 * url, content, score, published_date? }], response_time, ... }. Errors: { detail: { error } };
 * 401 bad key, 429 rate limit, 432/433 plan or pay-as-you-go limit. `basic` depth costs one
 * credit per call; published_date appears mainly on the `news` topic.
 */
import { callJson, type ProviderHttpOptions } from './http';
import { capQuery, finalize, isObject } from './normalize';
import { clampNumResults, SearchProviderError, type RawSearchResult, type SearchErrorReason, type SearchProvider } from './types';

export interface TavilyOptions extends ProviderHttpOptions {
  baseUrl: string;
  apiKey: string;
}

function classify(status: number, body: unknown): { reason?: SearchErrorReason; detail?: string } | undefined {
  const d = isObject(body) ? body.detail : undefined;
  const detail = isObject(d) && typeof d.error === 'string' ? d.error : typeof d === 'string' ? d : undefined;
  const reason: SearchErrorReason | undefined = status === 432 || status === 433 ? 'quota' : undefined;
  return { reason, detail };
}

export class TavilyProvider implements SearchProvider {
  readonly name = 'tavily' as const;
  constructor(private readonly opts: TavilyOptions) {}

  async search(q: string, numResults: number, signal?: AbortSignal): Promise<RawSearchResult[]> {
    const n = clampNumResults(numResults);
    const body = await callJson({
      provider: this.name,
      method: 'POST',
      url: `${this.opts.baseUrl.replace(/\/+$/, '')}/search`,
      headers: { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${this.opts.apiKey}` },
      body: JSON.stringify({
        query: capQuery(q),
        max_results: n,
        search_depth: 'basic',
        topic: 'general',
        include_answer: false,
        include_raw_content: false,
        include_images: false,
      }),
      classify,
    }, this.opts, signal);
    if (!isObject(body) || !Array.isArray(body.results)) {
      throw new SearchProviderError('SEARCH_PROVIDER_ERROR', this.name, 'malformed', 'tavily answer has no results array');
    }
    return finalize(
      body.results.filter(isObject).map((r) => ({ title: r.title, url: r.url, snippet: r.content, date: r.published_date })),
      n,
    );
  }
}
