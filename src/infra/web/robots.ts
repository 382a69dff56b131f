/**
 * robots.txt enforcement (RFC 9309) for browse. The file is fetched through the guarded client
 * (redirects followed, each hop checked), cached per origin, parsed and matched here
 * (`parseRobotsTxt`, `robotsAllows`: RFC 9309 as Google's reference parser reads it) for the
 * product token `svc-browse` (groups for `*` apply when none names us).
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
 * Encodes a URL's path and query the way a rule is encoded (`encodeURI`, existing
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

/** A rule with its pattern spelled as `normalisePattern` spells it. */
interface ParsedRule {
  pattern: string;
  allow: boolean;
}

/**
 * Whether a robots.txt pattern matches the start of `path` (`*` any run of characters, a final
 * `$` the end of the path), in time linear in the path for each `*`-separated piece: the leftmost
 * place for each piece leaves the most room for the rest, so no backtracking is needed.
 * Google's algorithm (a set of positions) costs path length × pattern length per rule;
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

/** One group: the product tokens its user-agent lines name (lower case; `*` for all) and its rules. */
export interface RobotsGroup {
  agents: string[];
  rules: ParsedRule[];
}

/**
 * A rule's pattern as svc compares it: escapes of unreserved characters decoded, the rest escaped
 * as `encodeURI` does (existing escapes kept), hex digits upper case, a `$` before the end `%24`. The URL goes through the
 * same steps (`decide`), so both sides are spelled alike.
 */
function normalisePattern(pattern: string): string {
  let out: string;
  try {
    out = encodeURI(decodeUnreserved(pattern)).replace(/%25/g, '%');
  } catch {
    out = pattern;
  }
  out = out.replace(/%[0-9a-fA-F]{2}/g, (esc) => esc.toUpperCase());
  // A `$` before the end is a literal, spelled as the URL spells one (`%24`, see `decide`).
  const anchored = out.endsWith('$');
  const body = (anchored ? out.slice(0, -1) : out).replace(/\$/g, '%24');
  return anchored ? `${body}$` : body;
}

/**
 * The product token a user-agent line names, as Google's parser reads it: `*` (alone or followed
 * by a space) for every crawler, else the leading run of letters, `-` and `_`, lower case
 * (`FOO BAR`, `foo/1.2`, `foo*` and `foo2` all name `foo`). Null when the line names nothing.
 */
export function userAgentToken(value: string): string | null {
  if (/^\*(\s|$)/.test(value)) return '*';
  const m = /^[A-Za-z_-]+/.exec(value);
  return m ? m[0].toLowerCase() : null;
}

const KEY_USER_AGENT = /^(user-agent|useragent|user agent)/i;
const KEY_ALLOW = /^allow/i;
const KEY_DISALLOW = /^(disallow|dissallow|dissalow|disalow|diasllow|disallaw)/i;

/** Trims ASCII white space only (String.trim would also drop a byte-order mark). */
const asciiTrim = (s: string): string => s.replace(/^[ \t\f\v]+|[ \t\f\v]+$/g, '');

/** Key and value of one line (comment already removed), as Google's parser splits it. */
function splitLine(line: string): [string, string] | null {
  const trimmed = asciiTrim(line);
  if (!trimmed) return null;
  const colon = trimmed.indexOf(':');
  if (colon >= 0) return [asciiTrim(trimmed.slice(0, colon)), asciiTrim(trimmed.slice(colon + 1))];
  // A forgotten colon: a key and a value separated by white space, and nothing more.
  const parts = trimmed.split(/[ \t]+/);
  return parts.length === 2 ? [parts[0], parts[1]] : null;
}

/**
 * Parses robots.txt (RFC 9309 section 2.1, read as Google's reference parser reads it). A UTF-8
 * byte-order mark, or the first bytes of one, is skipped at the start of the file only; one in
 * the middle of the file is part of its line (whose key is then unknown, so the line is ignored).
 * Lines end at CR, LF or CRLF; `#` starts a comment. Consecutive user-agent lines open one group,
 * which runs until the next user-agent line that follows a rule; rules before any user-agent line
 * belong to no group. Keys are case-insensitive, with the common misspellings Google accepts
 * (`useragent`, `user agent`, `disalow` ...). Other keys (sitemap, crawl-delay ...) are ignored and
 * do not end a group. An empty `Disallow:` is no rule; an empty `Allow:` neither.
 */
export function parseRobotsTxt(body: Buffer | string): RobotsGroup[] {
  let bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const bom = [0xef, 0xbb, 0xbf];
  let skip = 0;
  while (skip < 3 && skip < bytes.length && bytes[skip] === bom[skip]) skip++;
  if (skip) bytes = bytes.subarray(skip);
  const text = bytes.toString('utf8');
  const groups: RobotsGroup[] = [];
  let current: RobotsGroup | null = null;
  let afterRule = false;
  for (const raw of text.split(/\r\n|\r|\n/)) {
    const hash = raw.indexOf('#');
    const kv = splitLine(hash >= 0 ? raw.slice(0, hash) : raw);
    if (!kv) continue;
    const [key, value] = kv;
    if (KEY_USER_AGENT.test(key)) {
      if (!current || afterRule) {
        current = { agents: [], rules: [] };
        groups.push(current);
        afterRule = false;
      }
      const agent = userAgentToken(value);
      if (agent) current.agents.push(agent);
      continue;
    }
    const allow = KEY_ALLOW.test(key);
    if (!allow && !KEY_DISALLOW.test(key)) continue;
    if (!current) continue;
    afterRule = true;
    if (!value) continue;
    current.rules.push({ pattern: normalisePattern(value), allow });
    // Google: an allowed /index.html (or .htm) allows its directory too.
    const slash = value.lastIndexOf('/');
    if (allow && slash >= 0 && value.slice(slash).startsWith('/index.htm')) {
      current.rules.push({ pattern: normalisePattern(`${value.slice(0, slash + 1)}$`), allow: true });
    }
  }
  return groups;
}

/**
 * Whether the crawler `token` may fetch `path` (path and query, already normalised): the rules of
 * every group naming the token (merged), else of every `*` group; the longest matching pattern
 * wins, an allow on a tie; no match allows. A group that names the token applies even when it
 * has no rules (then everything is allowed), as in Google's parser.
 */
export function robotsAllows(groups: RobotsGroup[], token: string, path: string): boolean {
  const own = userAgentToken(token) ?? token.toLowerCase();
  let chosen = groups.filter((g) => g.agents.includes(own));
  if (chosen.length === 0) chosen = groups.filter((g) => g.agents.includes('*'));
  let best: ParsedRule | null = null;
  for (const group of chosen) {
    for (const rule of group.rules) {
      if (best && rule.pattern.length < best.pattern.length) continue;
      if (best && rule.pattern.length === best.pattern.length && (best.allow || !rule.allow)) continue;
      if (ruleMatches(rule.pattern, path)) best = rule;
    }
  }
  return !best || best.allow;
}

type Verdict =
  | { kind: 'rules'; groups: RobotsGroup[] }
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
  isAllowed(url: string | URL): Promise<boolean>;
  /** isAllowed, with why: 'disallowed' by a rule, or 'unreachable' (robots.txt answered 5xx or could not be fetched). */
  decide(url: string | URL): Promise<RobotsDecision>;
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
      if (res.status >= 200 && res.status < 300) return { kind: 'rules', groups: parseRobotsTxt(res.body) };
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

  async function decide(input: string | URL): Promise<RobotsDecision> {
    let url = typeof input === 'string' ? new URL(input) : input;
    // Escapes of unreserved characters decoded through the URL's own setters (which also resolve a
    // decoded `.` segment), on a copy: a caller's URL is never changed. Without a `%` nothing changes.
    if (url.pathname.includes('%') || url.search.includes('%')) {
      url = new URL(url.href);
      url.pathname = decodeUnreserved(url.pathname);
      url.search = decodeUnreserved(url.search);
    }
    const verdict = await verdictFor(url.origin);
    if (verdict.kind === 'blocked') throw verdict.error;
    if (verdict.kind === 'allow-all') return 'allowed';
    if (verdict.kind === 'disallow-all') return 'unreachable';
    // The robots.txt file itself is always allowed (RFC 9309 2.2.2).
    if (url.pathname === '/robots.txt' && !url.search) return 'allowed';
    // A literal `*` or `$` in the URL matches only `%2A` / `%24` in a rule (RFC 9309 2.2.3).
    const path = asRulesEncode(url.pathname + url.search)
      .replace(/%[0-9a-fA-F]{2}/g, (esc) => esc.toUpperCase())
      .replace(/[*$]/g, (c) => (c === '*' ? '%2A' : '%24'));
    return robotsAllows(verdict.groups, token, path) ? 'allowed' : 'disallowed';
  }

  return {
    decide,
    isAllowed: async (input) => (await decide(input)) === 'allowed',
    clear: () => cache.clear(),
  };
}
