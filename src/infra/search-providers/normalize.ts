/** Turning each provider's loosely typed hits into RawSearchResult: text, URL and date hygiene. */
import type { RawSearchResult } from './types';

const MAX_TITLE = 500;
const MAX_SNIPPET = 2000;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(s: string): string {
  // One pass, so "&amp;lt;" becomes "&lt;" and not "<".
  return s.replace(/&(#\d{1,7}|#x[0-9a-f]{1,6}|amp|lt|gt|quot|apos|nbsp);/gi, (whole, name: string) => {
    const lower = name.toLowerCase();
    if (lower.startsWith('#')) {
      const cp = lower.startsWith('#x') ? parseInt(lower.slice(2), 16) : parseInt(lower.slice(1), 10);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : whole;
    }
    return ENTITIES[lower] ?? whole;
  });
}

/** The first `max` UTF-16 units of `s`, one fewer when the cut would fall inside a surrogate pair. */
function sliceUnits(s: string, max: number): string {
  if (s.length <= max) return s;
  const c = s.charCodeAt(max - 1);
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max);
}

/**
 * Plain text: tags removed (Brave marks matches with <strong>), entities decoded, spaces collapsed,
 * at most `max` characters (code points, as svc counts characters everywhere): a cut never leaves
 * half of a surrogate pair (an emoji) behind, which is no text at all.
 */
export function cleanText(v: unknown, max: number): string {
  if (typeof v !== 'string') return '';
  const text = decodeEntities(v.replace(/<[^>]*>/g, '')).replace(/\s+/g, ' ').trim();
  if (text.length <= max) return text; // at most `max` units: at most `max` code points
  const chars = [...text];
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : text;
}

/**
 * The provider's URL as the parsed, serialised URL if it is an absolute http(s) one, else null: what
 * the agent gets is what svc read the host (and scored it) from, with no tab or newline a client
 * might parse differently.
 */
export function httpUrl(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const s = v.trim();
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '' ? u.href : null;
  } catch {
    return null;
  }
}

const ISO_NO_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;
const ISO_DAY = /^(\d{4})-(\d{2})-(\d{2})(?=$|T)/;
const YEAR_OR_MONTH_ONLY = /^\d{4}(-\d{2})?$/;

/** An ISO calendar day that exists (Date.parse rolls 2024-02-30 over to March 1st). */
function realDay(s: string): boolean {
  const m = ISO_DAY.exec(s);
  if (!m) return true;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return mo >= 1 && mo <= 12 && d >= 1 && d <= new Date(Date.UTC(y, mo, 0)).getUTCDate();
}
const HAS_ZONE = /(Z|[+-]\d{2}:?\d{2}|\bGMT\b|\bUTC\b)\s*$/i;
/** The strict ISO 8601 forms (a day, or a day and a time with or without a zone): they name their day. */
const ISO_FORM = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const TRAILING_ZONE = /\s*(\bGMT|\bUTC)?\s*[+-]\d{1,2}(:?\d{2})?\s*$/i;

/**
 * Whether free-form text names a day of the month: a number of one or two digits that is no part of
 * the year, of a time of day ("10:00") or of a zone offset ("GMT+1"). Date.parse makes the first of
 * January of "Spring 2024", "Updated 2024" or "March 2024", a day nobody published anything on.
 */
function namesADay(s: string): boolean {
  return /(^|[\s,./-])\d{1,2}(?![\d:])/.test(s.replace(TRAILING_ZONE, ''));
}

/**
 * An absolute date as ISO 8601 UTC, or null. Zone-less values are read as UTC (never the host's
 * zone). Relative ages such as Brave's "2 days ago" carry no year and give null, as do a bare year
 * or month ("2024", "2024-03", "March 2024", "Spring 2024": no day named) and an ISO day that does
 * not exist ("2024-02-30").
 */
export function toIsoDate(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const s = v.trim();
  // A bare year or month is no date of publication; a day that does not exist is no date at all.
  if (!/\d{4}/.test(s) || YEAR_OR_MONTH_ONLY.test(s) || !realDay(s)) return null;
  if (!ISO_FORM.test(s) && !namesADay(s)) return null;
  let ms: number;
  if (ISO_NO_ZONE.test(s)) ms = Date.parse(`${s}Z`);
  else if (/^\d{4}-\d{2}-\d{2}$/.test(s) || HAS_ZONE.test(s)) ms = Date.parse(s);
  else {
    ms = Date.parse(`${s} UTC`);
    if (Number.isNaN(ms)) ms = Date.parse(s);
  }
  if (Number.isNaN(ms)) return null;
  const year = new Date(ms).getUTCFullYear();
  return year >= 1970 && year <= 2200 ? new Date(ms).toISOString() : null;
}

export interface LooseHit {
  title: unknown;
  url: unknown;
  snippet: unknown;
  date: unknown;
}

/** Drops hits without a usable URL and repeated URLs, keeps provider order, cuts to n. */
export function finalize(hits: LooseHit[], n: number): RawSearchResult[] {
  const out: RawSearchResult[] = [];
  const seen = new Set<string>();
  for (const h of hits) {
    if (out.length >= n) break;
    const url = httpUrl(h.url);
    if (url === null || seen.has(url)) continue;
    seen.add(url);
    out.push({
      title: cleanText(h.title, MAX_TITLE) || url,
      url,
      snippet: cleanText(h.snippet, MAX_SNIPPET),
      published_date: toIsoDate(h.date),
    });
  }
  return out;
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Brave and Tavily refuse queries over 400 characters (Brave also over 50 words) while the API
 * accepts 500: cut at a word boundary rather than fail the whole search.
 */
export function capQuery(q: string, maxChars = 400, maxWords = Infinity): string {
  let s = q.trim().replace(/\s+/g, ' ');
  const words = s.split(' ');
  if (words.length > maxWords) s = words.slice(0, maxWords).join(' ');
  if (s.length <= maxChars) return s;
  // Counted in UTF-16 units (the stricter reading of the providers' limit), but never cut inside a
  // surrogate pair: half an emoji is sent as U+FFFD (Brave's URL) or a lone surrogate (Tavily's JSON).
  const cut = sliceUnits(s, maxChars);
  const space = cut.lastIndexOf(' ');
  return (space > maxChars / 2 ? cut.slice(0, space) : cut).trim();
}
