/**
 * What a page states about itself, beside its title and text: the byline, the date it was first
 * published, its language and the site's name. Only what the page states (metadata, JSON-LD,
 * microdata, a marked byline or <time>); nothing is guessed from the prose, and a field the page
 * does not state is null.
 *
 * - byline: JSON-LD `author` of the article (names joined with ", "), `<meta name="author">` (or
 *   `article:author` / `parsely-author` / `sailthru.author` when not a URL), microdata
 *   `itemprop="author"`, `rel="author"`, an element of class `byline` / `author` (a leading
 *   "By", "Von", "Par", "Por", "Di", "Door", "Av", "Przez" and a trailing date dropped); the
 *   extractor falls back on Readability's byline.
 * - published_at: JSON-LD `datePublished`, `article:published_time` and its kin
 *   (`og:published_time`, `date`, `pubdate`, `DC.date.issued`, `dcterms.created`,
 *   `citation_publication_date` ...), microdata `datePublished`, a `<time pubdate>` or the first
 *   `<time datetime>` in the article; as ISO 8601: `YYYY-MM-DD`, or with the time and the offset
 *   as the page gives them (`2024-03-05T08:30:00+01:00`). A written date in a dated element
 *   ("5 March 2024", "5. März 2024", "05.03.2024", "2024年3月5日") is read in the common European
 *   languages.
 * - language: `<html lang>`, `<meta http-equiv="content-language">`, `og:locale`, JSON-LD
 *   `inLanguage`, `dc.language`; as a BCP 47 tag (`en`, `pt-BR`, `zh-Hant`).
 * - site_name: `og:site_name`, `application-name`, the JSON-LD publisher's or WebSite's name.
 */
import type { parseHTML } from 'linkedom';

export interface PageMeta {
  byline: string | null;
  published_at: string | null;
  language: string | null;
  site_name: string | null;
}

type Doc = ReturnType<typeof parseHTML>['document'];
interface El {
  textContent: string | null;
  getAttribute(name: string): string | null;
  closest(selector: string): El | null;
}
const all = (doc: Doc, selector: string): El[] => Array.from(doc.querySelectorAll(selector) as ArrayLike<unknown>) as El[];
const one = (doc: Doc, selector: string): El | null => doc.querySelector(selector) as El | null;
export const collapse = (s: string | null | undefined): string => (s ?? '').replace(/\s+/g, ' ').trim();

/** The content of the first `<meta>` matching one of `selectors` that has one. */
export function meta(doc: Doc, ...selectors: string[]): string {
  for (const sel of selectors) {
    for (const el of all(doc, sel)) {
      const v = collapse(el.getAttribute('content'));
      if (v) return v;
    }
  }
  return '';
}

/** Objects of the page's JSON-LD blocks, with @graph and arrays flattened. */
export function jsonLd(doc: Doc): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const walk = (v: unknown, depth: number): void => {
    if (depth > 4 || !v || typeof v !== 'object') return;
    if (Array.isArray(v)) return v.forEach((x) => walk(x, depth + 1));
    const o = v as Record<string, unknown>;
    out.push(o);
    if (o['@graph']) walk(o['@graph'], depth + 1);
  };
  for (const el of all(doc, 'script[type="application/ld+json"]')) {
    try {
      walk(JSON.parse(el.textContent ?? ''), 0);
    } catch {
      // a broken block says nothing
    }
  }
  return out;
}

export const ARTICLE_TYPES = /^(Article|NewsArticle|BlogPosting|Report|ScholarlyArticle|TechArticle|Review|Recipe|HowTo|QAPage|Question|WebPage|Product|Event|JobPosting|PressRelease|AnalysisNewsArticle|OpinionNewsArticle|ReportageNewsArticle|LiveBlogPosting|DiscussionForumPosting|SocialMediaPosting|Blog|MedicalWebPage|FAQPage|AboutPage|ItemPage|CollectionPage)$/;

const typesOf = (o: Record<string, unknown>): string[] => {
  const t = o['@type'];
  return (Array.isArray(t) ? t : [t]).filter((x): x is string => typeof x === 'string');
};

/** The JSON-LD object that describes the page's article (the first of an article type), if any. */
export function ldArticle(ld: Record<string, unknown>[]): Record<string, unknown> | undefined {
  const articles = ld.filter((o) => typesOf(o).some((t) => ARTICLE_TYPES.test(t)));
  // A WebPage wrapper loses to the Article it contains.
  return articles.find((o) => !typesOf(o).every((t) => /Page$/.test(t))) ?? articles[0];
}

const nameOf = (v: unknown): string[] => {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.flatMap(nameOf);
  if (v && typeof v === 'object') return nameOf((v as Record<string, unknown>).name);
  return [];
};

const isUrl = (s: string) => /^(https?:)?\/\//i.test(s) || /^www\./i.test(s);

/** "By Jane Doe | March 5, 2024" → "Jane Doe". */
export function cleanByline(raw: string): string {
  let s = collapse(raw)
    .replace(/^(?:written\s+)?(?:by|von|par|por|di|da|door|av|af|przez|от|автор:?|author:?|autor:?|auteur:?|text:?|texte:?|testo:?|reporting by)\s+/i, '')
    .replace(/\s*(?:[|•·—–,]|\bon\b|\bam\b|\ble\b|\bel\b|\bil\b|\bupdated\b|\bpublished\b).*?\d{4}.*$/i, '')
    .replace(/\s*\d{1,4}[./-]\d{1,2}[./-]\d{1,4}.*$/, '')
    .replace(/[\s,|•·—–-]+$/, '')
    .trim();
  if (s.length > 120 || !s || isUrl(s) || !/\p{L}/u.test(s)) s = '';
  return s;
}

function byline(doc: Doc, article: Record<string, unknown> | undefined): string | null {
  const fromLd = nameOf(article?.author).map(collapse).filter((n) => n && !isUrl(n));
  if (fromLd.length) return [...new Set(fromLd)].join(', ');
  const named = meta(doc, 'meta[name="author"]', 'meta[property="article:author"]', 'meta[name="article:author"]', 'meta[name="parsely-author"]', 'meta[name="sailthru.author"]', 'meta[name="dc.creator"]', 'meta[name="DC.creator"]', 'meta[name="citation_author"]');
  if (named && !isUrl(named)) return cleanByline(named) || null;
  const micro = one(doc, '[itemprop~="author"] [itemprop~="name"]') ?? one(doc, '[itemprop~="author"]');
  const el = micro ?? one(doc, '[rel~="author"]') ?? one(doc, '.byline, .author-name, .byline-name, .author, [class*="byline"]');
  return cleanByline(el?.getAttribute('content') || el?.textContent || '') || null;
}

const MONTHS: Record<string, number> = {};
// English, German, French, Spanish, Italian, Portuguese, Dutch, Swedish/Norwegian/Danish, Polish (genitive), with common abbreviations.
[
  'january february march april may june july august september october november december',
  'januar februar märz april mai juni juli august september oktober november dezember',
  'janvier février mars avril mai juin juillet août septembre octobre novembre décembre',
  'enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre',
  'gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre',
  'janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro',
  'januari februari maart april mei juni juli augustus september oktober november december',
  'januari februari mars april maj juni juli augusti september oktober november december',
  'stycznia lutego marca kwietnia maja czerwca lipca sierpnia września października listopada grudnia',
  'jänner feber märz april mai juni juli august september oktober november dezember',
].forEach((line) => line.split(' ').forEach((m, i) => {
  MONTHS[m] = i + 1;
  if (m.length > 3) MONTHS[m.slice(0, 3)] ??= i + 1;
}));
Object.assign(MONTHS, { sept: 9, 'févr': 2, 'janv': 1, 'avr': 4, 'juil': 7, 'déc': 12, 'mär': 3, 'okt': 10, 'dez': 12, 'set': 9, 'dic': 12, 'ene': 1, 'ago': 8 });

const pad = (n: number) => String(n).padStart(2, '0');
function ymd(y: number, m: number, d: number): string | null {
  if (y < 1900 || y > 2100 || m < 1 || m > 12 || d < 1 || d > 31) return null;
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCMonth() === m - 1 ? `${y}-${pad(m)}-${pad(d)}` : null;
}

/** A stated date as ISO 8601 (`YYYY-MM-DD`, or with time and offset as given), or null. */
export function normalizeDate(raw: string): string | null {
  const s = collapse(raw);
  if (!s) return null;
  const iso = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}))?(?:[.,]\d+)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?)?/i.exec(s);
  if (iso) {
    const day = ymd(+iso[1], +iso[2], +iso[3]);
    if (!day) return null;
    if (iso[4] === undefined || +iso[4] > 23) return day;
    const zone = iso[7] ? (iso[7].toUpperCase() === 'Z' ? 'Z' : iso[7].replace(/^([+-]\d{2}):?(\d{2})?$/, (_m, h: string, mm?: string) => `${h}:${mm ?? '00'}`)) : '';
    return `${day}T${pad(+iso[4])}:${iso[5]}:${iso[6] ?? '00'}${zone}`;
  }
  let m = /^(\d{4})[/.](\d{1,2})[/.](\d{1,2})\b/.exec(s) ?? null;
  if (m) return ymd(+m[1], +m[2], +m[3]);
  m = /(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日/.exec(s);
  if (m) return ymd(+m[1], +m[2], +m[3]);
  m = /(\d{4})\s*년\s*(\d{1,2})\s*월\s*(\d{1,2})\s*일/.exec(s);
  if (m) return ymd(+m[1], +m[2], +m[3]);
  // Day first (European): 05.03.2024, 5/3/2024 is ambiguous and left alone unless the day is over 12.
  m = /\b(\d{1,2})\.\s?(\d{1,2})\.\s?(\d{4})\b/.exec(s);
  if (m) return ymd(+m[3], +m[2], +m[1]);
  const lower = s.toLowerCase();
  // "5 March 2024", "5. März 2024", "5 de marzo de 2024", "le 5 mars 2024", "5 maja 2024"
  m = /\b(\d{1,2})(?:st|nd|rd|th|er|º|\.)?\s+(?:de\s+)?([\p{L}]{3,12})\.?,?\s+(?:de\s+)?(\d{4})\b/u.exec(lower);
  if (m && MONTHS[m[2]]) return ymd(+m[3], MONTHS[m[2]], +m[1]);
  // "March 5, 2024", "Mar. 5 2024"
  m = /\b([\p{L}]{3,12})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b/u.exec(lower);
  if (m && MONTHS[m[1]]) return ymd(+m[3], MONTHS[m[1]], +m[2]);
  m = /\b(\d{1,2})\/(\d{1,2})\/(\d{4})\b/.exec(s);
  if (m && +m[1] > 12) return ymd(+m[3], +m[2], +m[1]);
  if (m && +m[2] > 12) return ymd(+m[3], +m[1], +m[2]);
  return null;
}

function published(doc: Doc, article: Record<string, unknown> | undefined): string | null {
  const candidates: string[] = [];
  if (typeof article?.datePublished === 'string') candidates.push(article.datePublished);
  candidates.push(meta(doc,
    'meta[property="article:published_time"]', 'meta[name="article:published_time"]', 'meta[property="og:published_time"]',
    'meta[itemprop="datePublished"]', 'meta[name="pubdate"]', 'meta[name="publishdate"]', 'meta[name="publish-date"]', 'meta[name="publish_date"]',
    'meta[name="date"]', 'meta[name="DC.date.issued"]', 'meta[name="dc.date.issued"]', 'meta[name="DC.date"]', 'meta[name="dc.date"]',
    'meta[name="dcterms.issued"]', 'meta[name="dcterms.created"]', 'meta[name="DCTERMS.issued"]', 'meta[name="citation_publication_date"]',
    'meta[name="citation_date"]', 'meta[name="sailthru.date"]', 'meta[name="parsely-pub-date"]', 'meta[property="article:published"]'));
  const micro = one(doc, '[itemprop~="datePublished"]');
  if (micro) candidates.push(micro.getAttribute('datetime') || micro.getAttribute('content') || micro.textContent || '');
  const time = one(doc, 'time[pubdate]') ?? one(doc, 'article time[datetime], main time[datetime], [role=main] time[datetime]') ?? (all(doc, 'time[datetime]').length === 1 ? one(doc, 'time[datetime]') : null);
  if (time) candidates.push(time.getAttribute('datetime') || time.textContent || '');
  const dated = one(doc, 'article .published, article .date, article .dateline, .post-date, .entry-date, .article-date, .publish-date, .published-date, .date-published, .pubdate');
  if (dated) candidates.push(dated.getAttribute('datetime') || dated.textContent || '');
  for (const c of candidates) {
    const d = c ? normalizeDate(c) : null;
    if (d) return d;
  }
  return null;
}

/** A language tag as BCP 47 spells it (`en`, `en-US`, `zh-Hant-TW`), or null when it is none. */
export function normalizeLanguage(raw: string): string | null {
  const tag = collapse(raw).split(/[,;\s]/)[0].replace(/_/g, '-');
  if (!/^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$/i.test(tag) || /^(und|mul|zxx|xx)$/i.test(tag)) return null;
  return tag.split('-').map((p, i) => (i === 0 ? p.toLowerCase() : p.length === 2 ? p.toUpperCase() : p.length === 4 ? p[0].toUpperCase() + p.slice(1).toLowerCase() : p.toLowerCase())).join('-');
}

function language(doc: Doc, article: Record<string, unknown> | undefined): string | null {
  const html = doc.documentElement as unknown as El | null;
  const ldLang = typeof article?.inLanguage === 'string' ? article.inLanguage : nameOf(article?.inLanguage)[0] ?? '';
  for (const c of [
    html?.getAttribute('lang') ?? '', html?.getAttribute('xml:lang') ?? '',
    meta(doc, 'meta[http-equiv="content-language"]', 'meta[http-equiv="Content-Language"]'),
    meta(doc, 'meta[property="og:locale"]'), ldLang, meta(doc, 'meta[name="dc.language"]', 'meta[name="DC.language"]', 'meta[name="language"]'),
  ]) {
    const l = normalizeLanguage(c);
    if (l) return l;
  }
  return null;
}

/** The site's name as the page states it. */
export function siteName(doc: Doc, ld = jsonLd(doc)): string {
  const stated = meta(doc, 'meta[property="og:site_name"]', 'meta[name="og:site_name"]', 'meta[name="application-name"]', 'meta[name="apple-mobile-web-app-title"]');
  if (stated) return stated;
  const article = ldArticle(ld);
  const publisher = nameOf(article?.publisher)[0];
  if (publisher) return collapse(publisher);
  const site = ld.find((o) => typesOf(o).includes('WebSite') && typeof o.name === 'string');
  return collapse(site?.name as string | undefined);
}

/** The page's stated byline, publication date, language and site name. */
export function pageMeta(doc: Doc): PageMeta {
  const ld = jsonLd(doc);
  const article = ldArticle(ld);
  return {
    byline: byline(doc, article),
    published_at: published(doc, article),
    language: language(doc, article),
    site_name: siteName(doc, ld) || null,
  };
}
