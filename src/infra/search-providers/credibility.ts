/**
 * Credibility of a search hit from its host name alone (spec: 1.0 .gov, 0.9 .edu, 0.8 major
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
  return host.trim().toLowerCase().replace(/\.$/, '').replace(/^www\./, '');
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

export function credibilityScore(host: string, newsDomains: readonly string[]): number {
  const h = normaliseHost(host);
  const labels = h.split('.').filter(Boolean);
  if (labels.length === 0) return 0.5;
  if (under(labels, 'gov', ['gov', 'gouv', 'gob'])) return 1.0;
  if (under(labels, 'edu', ['edu', 'ac'])) return 0.9;
  for (const d of newsDomains) {
    const nd = normaliseHost(d);
    if (nd && (h === nd || h.endsWith(`.${nd}`))) return 0.8;
  }
  if (labels.length >= 2 && labels[labels.length - 1] === 'org') return 0.7;
  return 0.5;
}

/** Adds `source` and `credibility_score` (the spec's Search result shape). */
export function scoreResults(results: readonly RawSearchResult[], newsDomains: readonly string[]): ScoredSearchResult[] {
  return results.map((r) => {
    const source = sourceOf(r.url);
    // Field order of the spec's Search result table (JSON keeps insertion order).
    return { title: r.title, url: r.url, snippet: r.snippet, source, credibility_score: credibilityScore(source, newsDomains), published_date: r.published_date };
  });
}
