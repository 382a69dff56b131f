/**
 * Credibility of a search hit from its host name alone (1.0 .gov, 0.9 .edu, 0.8 major
 * news, 0.7 .org, 0.5 others). Checked in that order, so npr.org scores 0.8, not 0.7.
 * - gov: the TLD `.gov`, or `gov`/`gouv`/`gob` directly under a two-letter country code
 *   (gov.uk, gov.au, gouv.fr, gob.mx). The match is by name only: a country that lets anyone
 *   register under `gov.<cc>` would be scored 1.0 too.
 * - edu: the TLD `.edu`, or `edu`/`ac` under a two-letter country code (edu.au, ac.uk, ac.jp).
 * - news: host equals a listed domain or is a subdomain of it (SVC_NEWS_DOMAINS).
 * - org: the TLD `.org` (not org.uk and the like: those are registries open to anyone).
 * `source` is the URL's host name, lower-cased, without a trailing dot and without one leading
 * `www.`; international names stay in their punycode (xn--) form, as the URL parser gives them.
 */
import type { RawSearchResult } from './types';

export interface ScoredSearchResult extends RawSearchResult {
  source: string;
  credibility_score: number;
}

/** Lower-cased host, one leading "www." and a trailing dot removed; '' for junk. */
export function normaliseHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.+$/, '').replace(/^www\./, '');
}

/** The `source` of a result: normalised host name of its URL ('' if the URL does not parse). */
export function sourceOf(url: string): string {
  try {
    return normaliseHost(new URL(url).hostname);
  } catch {
    return '';
  }
}

const isCc = (label: string | undefined): boolean => label !== undefined && /^[a-z]{2}$/.test(label);

function under(labels: string[], tld: string, secondLevel: string[]): boolean {
  const last = labels[labels.length - 1];
  const second = labels[labels.length - 2];
  if (last === tld && labels.length >= 2) return true;
  return labels.length >= 2 && isCc(last) && second !== undefined && secondLevel.includes(second);
}

/** Normalise a configured news domain list once (lower-case, no www., no blanks). */
export function normaliseDomains(domains: readonly string[]): string[] {
  return [...new Set(domains.map(normaliseHost).filter(Boolean))];
}

// The news list normalised once per list (the configured list is one array for the process's life and
// is never changed in place), so scoring a host costs one set lookup per label instead of normalising
// every listed domain: that was ~11 % of a cached search's CPU with the default list.
const newsSets = new WeakMap<readonly string[], Set<string>>();
function newsSetOf(newsDomains: readonly string[]): Set<string> {
  let set = newsSets.get(newsDomains);
  if (!set) newsSets.set(newsDomains, (set = new Set(normaliseDomains(newsDomains))));
  return set;
}

/** Whether `h` is a listed domain or a subdomain of one: some label-aligned suffix of it is listed. */
function isNews(h: string, news: Set<string>): boolean {
  if (news.size === 0) return false;
  for (let i = 0; ;) {
    if (news.has(h.slice(i))) return true;
    const dot = h.indexOf('.', i);
    if (dot === -1) return false;
    i = dot + 1;
  }
}

export function credibilityScore(host: string, newsDomains: readonly string[]): number {
  const h = normaliseHost(host);
  const labels = h.split('.').filter(Boolean);
  if (labels.length === 0) return 0.5;
  if (under(labels, 'gov', ['gov', 'gouv', 'gob'])) return 1.0;
  if (under(labels, 'edu', ['edu', 'ac'])) return 0.9;
  if (isNews(h, newsSetOf(newsDomains))) return 0.8;
  if (labels.length >= 2 && labels[labels.length - 1] === 'org') return 0.7;
  return 0.5;
}

// A cached answer is the same results array on every hit (in-process cache): its scores are computed
// once, and its JSON too. The scored hits are frozen, since every caller of that answer shares them.
interface Scored { news: readonly string[]; hits: readonly ScoredSearchResult[]; json?: string }
const scored = new WeakMap<readonly RawSearchResult[], Scored>();

function scoredOf(results: readonly RawSearchResult[], newsDomains: readonly string[]): Scored {
  const memo = scored.get(results);
  if (memo && memo.news === newsDomains) return memo;
  const hits = results.map((r) => {
    const source = sourceOf(r.url);
    // Field order of the API's search result (JSON keeps insertion order).
    return Object.freeze({ title: r.title, url: r.url, snippet: r.snippet, source, credibility_score: credibilityScore(source, newsDomains), published_date: r.published_date });
  });
  const entry: Scored = { news: newsDomains, hits };
  scored.set(results, entry);
  return entry;
}

/** Adds `source` and `credibility_score` (the API's search result shape). */
export function scoreResults(results: readonly RawSearchResult[], newsDomains: readonly string[]): ScoredSearchResult[] {
  return [...scoredOf(results, newsDomains).hits];
}

/** `JSON.stringify(scoreResults(results, newsDomains))`, serialised once per results array. */
export function scoredResultsJson(results: readonly RawSearchResult[], newsDomains: readonly string[]): string {
  const entry = scoredOf(results, newsDomains);
  return (entry.json ??= JSON.stringify(entry.hits));
}
