/**
 * robots.txt enforcement (RFC 9309) for browse. The file is fetched through the guarded client
 * (redirects followed, each hop checked), cached per origin, and matched with robots-parser
 * against the product token `svc-browse` (groups for `*` apply when none names us).
 *
 * Status semantics, per RFC 9309 section 2.3.1:
 *   2xx                       parse the first 500 KiB; rules decide
 *   4xx (incl. 401/403/404)   "unavailable": everything allowed
 *   5xx, network failure,
 *   timeout, blocked redirect "unreachable": everything disallowed
 *   more than 5 redirects     treated as unavailable (allowed), as the RFC permits
 *   the origin's own address  not a robots question: the site's host connects to an address the
 *   refused at connect time   policy refuses (a name that rebound after validation), so isAllowed
 *                             throws that BROWSE_URL_BLOCKED error and nothing is cached
 * Percent-encoding (RFC 9309 2.2.2): an escaped unreserved character (letters, digits, - . _ ~) is
 * the character itself, in the rules and in the URL alike, so `/%70rivate` is `/private`; reserved
 * characters (`%2F` ...) stay escaped and match only themselves.
 * Successes and 4xx are cached for `ttlMs`; unreachable results for the shorter `errorTtlMs`, so a
 * passing outage does not lock a site out for the whole cache lifetime.
 */
import robotsParser from 'robots-parser';
import type { Clock } from '../../lib/clock';
import { isWebError, type WebError } from './errors';
import type { GuardedClient } from './guarded-client';

export const ROBOTS_TOKEN = 'svc-browse';
export const ROBOTS_MAX_BYTES = 500 * 1024;
const ROBOTS_TIMEOUT_MS = 10_000;
const MAX_ORIGINS = 1_000;

/** Decodes percent-escapes of unreserved characters (RFC 3986 2.3), leaving every other escape as it is. */
export function decodeUnreserved(text: string): string {
  return text.includes('%')
    ? text.replace(/%([0-9A-Fa-f]{2})/g, (esc, hex: string) => {
      const c = String.fromCharCode(parseInt(hex, 16));
      return /[A-Za-z0-9\-._~]/.test(c) ? c : esc;
    })
    : text;
}

/**
 * Encodes a URL's path and query the way robots-parser encodes a rule (`encodeURI`, existing
 * escapes kept), so both sides of the comparison are spelled alike. The WHATWG URL parser leaves
 * `[ ] | ^ \ { } \`` as they are in a path or query, while a rule naming them is turned into
 * `%5B`, `%7C` ...: `Disallow: /*?filter[` never matched `?filter[color]=red`, which was fetched.
 */
function asRulesEncode(pathAndQuery: string): string {
  try {
    return encodeURI(pathAndQuery).replace(/%25/g, '%');
  } catch {
    return pathAndQuery;
  }
}

/** A rule as robots-parser keeps it: the pattern escaped as `normaliseEncoding` escapes it. */
interface ParsedRule {
  pattern: string;
  allow: boolean;
}
type Robot = ReturnType<typeof robotsParser>;

/**
 * Whether a robots.txt pattern matches the start of `path` (`*` any run of characters, a final
 * `$` the end of the path), in time linear in the path for each `*`-separated piece: the leftmost
 * place for each piece leaves the most room for the rest, so no backtracking is needed.
 * robots-parser's own matcher (Google's algorithm) costs path length × pattern length per rule;
 * a hostile robots.txt of 500 KiB of `*` against an 8 KiB URL held the event loop for over five
 * seconds on every decision about that site (each redirect hop, each request of a rendered page).
 */
export function ruleMatches(pattern: string, path: string): boolean {
  const anchored = pattern.endsWith('$');
  const parts = (anchored ? pattern.slice(0, -1) : pattern).split('*');
  const first = parts[0];
  if (!path.startsWith(first)) return false;
  if (parts.length === 1) return !anchored || path.length === first.length;
  let pos = first.length;
  const last = parts.length - 1;
  for (let i = 1; i < last; i++) {
    if (parts[i] === '') continue;
    const at = path.indexOf(parts[i], pos);
    if (at < 0) return false;
    pos = at + parts[i].length;
  }
  const tail = parts[last];
  if (!anchored) return tail === '' || path.indexOf(tail, pos) >= 0;
  return path.length - tail.length >= pos && path.endsWith(tail);
}

/**
 * robots-parser's decision (the group naming `token`, else `*`; the longest matching rule wins, an
 * allow on a tie) over the rules it parsed, with the linear matcher above. Falls back to the
 * library's own isAllowed if its parsed rules are not where version 3 keeps them.
 */
function robotAllows(robot: Robot, origin: string, pathAndQuery: string, token: string): boolean {
  const rules = (robot as unknown as { _rules?: Record<string, ParsedRule[] | undefined> })._rules;
  if (!rules || typeof rules !== 'object') return robot.isAllowed(origin + pathAndQuery, token) !== false;
  const group = rules[token.toLowerCase().split('/')[0].trim()] ?? rules['*'] ?? [];
  const path = pathAndQuery.replace(/%[0-9a-fA-F]{2}/g, (esc) => esc.toUpperCase());
  let best: ParsedRule | null = null;
  for (const rule of group) {
    if (best && rule.pattern.length < best.pattern.length) continue;
    if (best && rule.pattern.length === best.pattern.length && (best.allow || !rule.allow)) continue;
    if (ruleMatches(rule.pattern, path)) best = rule;
  }
  return !best || best.allow;
}

type Verdict =
  | { kind: 'rules'; robot: Robot }
  | { kind: 'allow-all' }
  | { kind: 'disallow-all' }
  | { kind: 'blocked'; error: WebError };
interface Entry {
  verdict: Verdict;
  expires: number;
}

export interface RobotsPolicy {
  /**
   * Whether `svc-browse` may fetch this URL. Never throws for network trouble (that disallows);
   * throws the guarded client's BROWSE_URL_BLOCKED when the origin's own address is refused.
   */
  isAllowed(url: string): Promise<boolean>;
  /** isAllowed, with why: 'disallowed' by a rule, or 'unreachable' (robots.txt answered 5xx or could not be fetched). */
  decide(url: string): Promise<RobotsDecision>;
  /** Forgets every cached robots.txt. */
  clear(): void;
}

export type RobotsDecision = 'allowed' | 'disallowed' | 'unreachable';

export interface RobotsOptions {
  client: GuardedClient;
  clock: Clock;
  ttlMs: number;
  errorTtlMs: number;
  token?: string;
}

export function createRobotsPolicy(opts: RobotsOptions): RobotsPolicy {
  const token = opts.token ?? ROBOTS_TOKEN;
  const cache = new Map<string, Entry>();
  const inflight = new Map<string, Promise<Verdict>>();

  async function fetchVerdict(origin: string): Promise<Verdict> {
    const robotsUrl = `${origin}/robots.txt`;
    try {
      const res = await opts.client.fetch(robotsUrl, {
        maxBytes: ROBOTS_MAX_BYTES,
        onOversize: 'truncate',
        timeoutMs: ROBOTS_TIMEOUT_MS,
        headers: { accept: 'text/plain,*/*;q=0.5' },
      });
      // Rules found after a redirect still govern the origin we asked about (RFC 9309 2.3.1.2).
      if (res.status >= 200 && res.status < 300) return { kind: 'rules', robot: robotsParser(robotsUrl, decodeUnreserved(res.body.toString('utf8'))) };
      if (res.status >= 400 && res.status < 500) return { kind: 'allow-all' };
      if (res.status >= 300 && res.status < 400) return { kind: 'allow-all' }; // redirect without Location
      return { kind: 'disallow-all' };
    } catch (err) {
      if (isWebError(err) && err.reason === 'too_many_redirects') return { kind: 'allow-all' };
      if (isWebError(err) && err.reason === 'address_not_allowed') return { kind: 'blocked', error: err };
      return { kind: 'disallow-all' };
    }
  }

  async function verdictFor(origin: string): Promise<Verdict> {
    const now = opts.clock.now();
    const hit = cache.get(origin);
    if (hit && hit.expires > now) return hit.verdict;
    const pending = inflight.get(origin);
    if (pending) return pending;
    const p = fetchVerdict(origin)
      .then((verdict) => {
        const ttl = verdict.kind === 'blocked' ? 0 : verdict.kind === 'disallow-all' ? opts.errorTtlMs : opts.ttlMs;
        cache.delete(origin);
        if (ttl > 0) cache.set(origin, { verdict, expires: opts.clock.now() + ttl });
        // Oldest-first eviction keeps the cache bounded (Map keeps insertion order).
        while (cache.size > MAX_ORIGINS) cache.delete(cache.keys().next().value as string);
        return verdict;
      })
      .finally(() => inflight.delete(origin));
    inflight.set(origin, p);
    return p;
  }

  async function decide(input: string): Promise<RobotsDecision> {
    const url = new URL(input);
    url.hash = '';
    url.pathname = decodeUnreserved(url.pathname);
    url.search = decodeUnreserved(url.search);
    const verdict = await verdictFor(url.origin);
    if (verdict.kind === 'blocked') throw verdict.error;
    if (verdict.kind === 'allow-all') return 'allowed';
    if (verdict.kind === 'disallow-all') return 'unreachable';
    return robotAllows(verdict.robot, url.origin, asRulesEncode(url.pathname + url.search), token) ? 'allowed' : 'disallowed';
  }

  return {
    decide,
    isAllowed: async (input) => (await decide(input)) === 'allowed',
    clear: () => cache.clear(),
  };
}
