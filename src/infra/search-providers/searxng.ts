/**
 * SearXNG JSON API: GET {base}/search?q=...&format=json. The instance must list `json` under
 * search.formats in settings.yml (otherwise it answers 403). No key. SearXNG returns one page
 * (about 10 to 30 merged hits) whatever the count, so we take the first n of page 1.
 * Response: { query, results: [{ url, title, content, publishedDate, engine, ... }],
 * unresponsive_engines: [[engine, error], ...], ... }. A 403 has no key behind it (SearXNG has
 * none): it means the instance does not serve format=json, so it is logged as such, not as auth.
 */
import { callJson, type ErrorReading, type ProviderHttpOptions } from './http';
import { finalize, isObject } from './normalize';
import { clampNumResults, SearchProviderError, type RawSearchResult, type SearchProvider } from './types';

export interface SearxngOptions extends ProviderHttpOptions {
  baseUrl: string;
}

function classify(status: number): ErrorReading | undefined {
  if (status === 403) return { reason: 'http_status', detail: 'format=json refused: add json to search.formats in settings.yml' };
  return undefined;
}

export class SearxngProvider implements SearchProvider {
  readonly name = 'searxng' as const;
  constructor(private readonly opts: SearxngOptions) {}

  async search(q: string, numResults: number, signal?: AbortSignal): Promise<RawSearchResult[]> {
    const n = clampNumResults(numResults);
    const url = new URL(`${this.opts.baseUrl.replace(/\/+$/, '')}/search`);
    url.searchParams.set('q', q.trim());
    url.searchParams.set('format', 'json');
    url.searchParams.set('pageno', '1');
    const body = await callJson({ provider: this.name, method: 'GET', url: url.href, headers: { accept: 'application/json' }, classify }, this.opts, signal);
    if (!isObject(body) || !Array.isArray(body.results)) {
      throw new SearchProviderError('SEARCH_PROVIDER_ERROR', this.name, 'malformed', 'searxng answer has no results array');
    }
    // Zero hits because every engine failed is an outage, not "nothing found".
    const broken = Array.isArray(body.unresponsive_engines) ? body.unresponsive_engines : [];
    if (body.results.length === 0 && broken.length > 0) {
      const names = broken.map((e) => (Array.isArray(e) ? String(e[0]) : String(e))).slice(0, 5).join(', ');
      throw new SearchProviderError('SEARCH_PROVIDER_ERROR', this.name, 'upstream_engines', `searxng: no results, engines unresponsive: ${names}`);
    }
    return finalize(
      body.results.filter(isObject).map((r) => ({ title: r.title, url: r.url, snippet: r.content, date: r.publishedDate ?? r.pubdate })),
      n,
    );
  }
}
