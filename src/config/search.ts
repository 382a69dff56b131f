import { bool, group, int, list, oneOf, optionalStr, optionalUrl, type Setting } from './define';

/** Provider names; also the fixed strings reported as `provider_used`. */
export const SEARCH_PROVIDER_NAMES = ['searxng', 'brave', 'tavily'] as const;
export type SearchProviderName = (typeof SEARCH_PROVIDER_NAMES)[number];
const choices = [...SEARCH_PROVIDER_NAMES, 'none'] as const;

/**
 * Major news sources scored 0.8 (subdomains match: `edition.cnn.com` counts as `cnn.com`).
 * International wire services, broadcasters and papers of record; an operator replaces the
 * whole list with SVC_NEWS_DOMAINS.
 */
export const DEFAULT_NEWS_DOMAINS = [
  'apnews.com', 'reuters.com', 'bloomberg.com', 'nytimes.com', 'washingtonpost.com', 'wsj.com',
  'ft.com', 'economist.com', 'theguardian.com', 'bbc.co.uk', 'bbc.com', 'npr.org', 'cnn.com',
  'nbcnews.com', 'cbsnews.com', 'abcnews.go.com', 'latimes.com', 'usatoday.com', 'politico.com',
  'axios.com', 'aljazeera.com', 'dw.com', 'france24.com', 'lemonde.fr', 'spiegel.de', 'cbc.ca',
  'abc.net.au', 'scmp.com', 'thehindu.com', 'japantimes.co.jp',
];

/** A URL setting with a real default (optionalUrl's validation, but never undefined). */
function urlWithDefault(env: string, def: string, doc: string): Setting<string> {
  const inner = optionalUrl(env, doc);
  return { env, doc, defaultText: def, read: (raw) => inner.read(raw) ?? def };
}

export const searchSettings = group('Web search providers', {
  primary: oneOf('SVC_SEARCH_PRIMARY', choices, 'none',
    'Provider that answers GET /v1/search first. `none`: web search answers 503 SEARCH_PROVIDER_UNCONFIGURED.'),
  fallback: oneOf('SVC_SEARCH_FALLBACK', choices, 'none',
    'Provider that answers once when the primary fails (error, timeout, bad key). Ignored when equal to the primary.'),
  fallbackEnabled: bool('SVC_SEARCH_FALLBACK_ENABLED', true,
    'Switch for the fallback provider; it is used only when this is true AND the fallback provider is configured (key or URL).'),
  searxngUrl: optionalUrl('SVC_SEARXNG_URL',
    'Base URL of a SearXNG instance with the JSON format enabled (settings.yml: search.formats includes json), e.g. http://127.0.0.1:8888. Unset: SearXNG is not configured.'),
  braveApiKey: optionalStr('SVC_BRAVE_API_KEY', 'Brave Search API subscription token (sent as X-Subscription-Token). Unset: Brave is not configured.'),
  braveUrl: urlWithDefault('SVC_BRAVE_URL', 'https://api.search.brave.com', 'Base URL of the Brave Search API (tests point it at a loopback fake).'),
  tavilyApiKey: optionalStr('SVC_TAVILY_API_KEY', 'Tavily API key (tvly-...; sent as Authorization: Bearer). Unset: Tavily is not configured.'),
  tavilyUrl: urlWithDefault('SVC_TAVILY_URL', 'https://api.tavily.com', 'Base URL of the Tavily API (tests point it at a loopback fake).'),
  timeoutMs: int('SVC_SEARCH_TIMEOUT_MS', 8000,
    'Time limit for one provider call, headers and body included. With a fallback the worst case is twice this.', { min: 100, max: 120_000 }),
  cache: oneOf('SVC_SEARCH_CACHE', ['auto', 'memory', 'redis', 'off'] as const, 'auto',
    'Cache for primary-provider answers. `auto`: Redis when REDIS_URL is set (shared by all instances), else in-process.'),
  cacheTtlSeconds: int('SVC_SEARCH_CACHE_TTL_SECONDS', 900, 'How long a primary-provider answer is reused for the same (query, num_results).', { min: 1, max: 604_800 }),
  cacheMaxEntries: int('SVC_SEARCH_CACHE_MAX_ENTRIES', 1000, 'Capacity of the in-process cache (least recently used answers are dropped first).', { min: 1, max: 1_000_000 }),
  newsDomains: list('SVC_NEWS_DOMAINS', DEFAULT_NEWS_DOMAINS,
    'Comma-separated domains scored 0.8 as major news sources (subdomains match). Replaces the default list.',
    (d) => (/^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)+\.?$/i.test(d.replace(/^www\./i, '')) ? undefined : 'is not a domain name (e.g. reuters.com)')),
  browseProbationHours: int('SVC_BROWSE_PROBATION_HOURS', 24,
    'Hours after registration during which a free-tier agent is probationary: dynamic browse answers 403 BROWSE_DYNAMIC_TRUST_TIER (static browse works). Buying credit ends it at once; 0 disables probation.', { min: 0, max: 8760 }),
});
