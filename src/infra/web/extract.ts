/**
 * Page text for browse: `{ title, text }` from a fetched body.
 *
 * - HTML: Mozilla Readability over a linkedom DOM picks the main content; its HTML is turned into
 *   text with paragraph breaks (html-text.ts). When Readability finds no article, or only a
 *   sliver of the page, a fallback takes the visible text of <main>/<article>/<body> with
 *   navigation, asides, footers, forms and ad/cookie/share boxes removed (lists, product pages,
 *   link directories).
 * - text/plain and other textual types (JSON, XML, CSV, Markdown): decoded and passed through.
 * - PDFs, images and other binaries: WebError BROWSE_PROVIDER_ERROR, reason
 *   unsupported_content_type (browse does not take PDFs; upload them as blobs to parse).
 * Pure and synchronous; extractor.ts runs it in a worker thread for the service.
 */
import { parseHTML } from 'linkedom';
import { Readability } from '@mozilla/readability';
import { classifyBody, decodeBody } from './content';
import { domToText, type DomNode } from './html-text';
import { cleanByline, collapse, jsonLd, ldArticle, meta, normalizeDate, pageMeta, siteName, type PageMeta } from './page-meta';

export type { PageMeta } from './page-meta';

export interface Extracted {
  title: string;
  text: string;
  /** What the page states about itself (null when it does not); plain text has none. */
  meta: PageMeta;
  /** How the text was obtained; useful in logs and the extraction bench. */
  method: 'readability' | 'fallback' | 'plain';
}

export const NO_META: PageMeta = { byline: null, published_at: null, language: null, site_name: null };

/**
 * Below this many characters a Readability result is not trusted as the page's content. A Chinese,
 * Japanese or Korean character counts three: it carries about what three letters of a European
 * language carry, and a full Chinese article is often under 250 characters.
 */
const MIN_ARTICLE_CHARS = 250;
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/g;
const weightedLength = (text: string): number => text.length + 2 * (text.match(CJK)?.length ?? 0);
/**
 * Readability's cost grows faster than linearly on linkedom (about 1 s at 12k elements, 15 s at
 * 60k); past this many elements we skip it and use the linear fallback. Its own maxElemsToParse
 * guard does not work on linkedom (getElementsByTagName('*') is empty there), so we count.
 */
const MAX_ELEMENTS = 10_000;

const NOISE_SELECTORS = [
  'script', 'style', 'noscript', 'template', 'nav', 'aside', 'footer', 'form', 'dialog', 'iframe',
  '[role=navigation]', '[role=banner]', '[role=contentinfo]', '[role=complementary]', '[role=search]', '[aria-hidden=true]', '[hidden]',
].join(',');
const NOISE_CLASS = /(^|[\s_-])(ads?|advert\w*|sponsor\w*|promo\w*|cookie\w*|consent|newsletter|share|sharing|social|breadcrumbs?|sidebar|popup|modal|skip-link|related|recommended|read-?also|read-?next|see-?also|also-?read|more-?stories|paywall|subscribe|subscription|signup|sign-up)($|[\s_-])/i;

/**
 * Parts of a MediaWiki page that are not the article's prose: infobox, navigation boxes, the
 * table of contents, edit links, hatnotes, the reference list and categories.
 */
const WIKI_NOISE = '.infobox, .navbox, .vertical-navbox, .sidebar.nomobile, #toc, .toc, .mw-editsection, .hatnote, #siteSub, #contentSub, .reflist, ol.references, .catlinks, .mw-jump-link, .noprint, .metadata.plainlinks, .ambox';

type Doc = ReturnType<typeof parseHTML>['document'];
// The slice of Element we use (the project compiles without the DOM type library).
interface El extends DomNode {
  remove(): void;
  closest(selector: string): El | null;
  getAttribute(name: string): string | null;
  querySelector(selector: string): El | null;
}
const all = (doc: Doc, selector: string): El[] => Array.from(doc.querySelectorAll(selector) as ArrayLike<unknown>) as El[];

/**
 * linkedom does not imply missing <html>/<head>/<body> the way browsers do (a bare fragment
 * becomes the document element, with no body), so a document lacking them is rebuilt first.
 */
function parse(html: string): Doc {
  if (/<html[\s>]/i.test(html) && /<body[\s>]/i.test(html)) return parseHTML(html).document;
  const head = /<head[\s>][\s\S]*?<\/head>/i.exec(html)?.[0] ?? '<head></head>';
  const rest = html
    .replace(/<!doctype[^>]*>/i, '')
    .replace(/<head[\s>][\s\S]*?<\/head>/i, '')
    .replace(/<\/?(html|body)(\s[^>]*)?>/gi, '');
  return parseHTML(`<!doctype html><html>${head}<body>${rest}</body></html>`).document;
}

/** Visible text of the page's main region with boilerplate removed. */
function fallbackText(doc: Doc): string {
  for (const el of all(doc, NOISE_SELECTORS)) el.remove();
  // Page-level headers carry logos and menus; headers inside an article carry its title.
  for (const el of all(doc, 'header')) if (!el.closest('article, main, [role=main]')) el.remove();
  removeNoiseBoxes(doc);
  removeCaptions(doc);
  removeBylines(doc);
  const body = doc.body as unknown as DomNode | null;
  const bodyText = body ? domToText(body) : '';
  const main = doc.querySelector('main, [role=main]') ?? (doc.querySelectorAll('article').length === 1 ? doc.querySelector('article') : null);
  if (main) {
    const mainText = domToText(main as unknown as DomNode);
    // A <main> that holds only a fraction of the page is a layout wrapper, not the content.
    if (mainText.length >= bodyText.length * 0.3) return mainText;
  }
  return bodyText;
}

/**
 * Whether a class or id names a boilerplate box. Each class token is read alone, and a noise
 * word that a token negates or qualifies (`no-share`, `content-with-sidebar-wrp`, `has-sidebar`)
 * does not count.
 */
function noiseName(names: string): boolean {
  for (const token of names.split(/\s+/)) {
    if (!token || !NOISE_CLASS.test(token)) continue;
    if (/(^|[\s_-])(no|not|without|with|has|hide|hidden)[_-]+(ads?|share|sharing|social|sidebar|promo\w*)/i.test(token)) continue;
    return true;
  }
  return false;
}

/**
 * Removes ad, cookie, share and newsletter boxes named by class or id. Readability keeps them
 * when it picks a whole container (and rewrites them as bare <p>s, so this must run before it).
 * Only boxes that look like boxes go: short (under 250 characters) or mostly links, and a small
 * part of the page. A long run of prose under such a name is content whatever its class says
 * (`id="sharing-section-3"` holding an article's section, an ad-industry report's
 * `Section--Ads`).
 */
function removeNoiseBoxes(doc: Doc): void {
  if (doc.querySelector('.mw-parser-output, #mw-content-text')) for (const el of all(doc, WIKI_NOISE)) el.remove();
  const total = collapse(doc.body?.textContent).length;
  for (const el of all(doc, '[class], [id]')) {
    if (!noiseName(`${el.getAttribute('class') ?? ''} ${el.getAttribute('id') ?? ''}`)) continue;
    const text = collapse(el.textContent);
    if (text.length >= total * 0.3) continue;
    if (text.length < 250) {
      el.remove();
      continue;
    }
    const links = all(el as unknown as Doc, 'a').reduce((n, a) => n + collapse(a.textContent).length, 0);
    if (links > text.length * 0.5) el.remove();
  }
}

/** Class tokens of a caption or credit line under a picture (`wp-caption-text`, `image-caption`, `photo-credit`). */
const CAPTION_CLASS = /(^|[_-])(caption|captions|credit|credits|figcaption)($|[_-])/i;

/**
 * Removes captions and credit lines of pictures that are not <figcaption> (domToText skips those):
 * an element with a caption class that is short and sits beside a picture, so the caption of a
 * photo never reads as a paragraph of the article.
 */
function removeCaptions(doc: Doc): void {
  for (const el of all(doc, '[class*="caption"], [class*="credit"], [class*="Caption"], [class*="Credit"]')) {
    if (!(el.getAttribute('class') ?? '').split(/\s+/).some((t) => CAPTION_CLASS.test(t))) continue;
    if (collapse(el.textContent).length > 400) continue;
    const box = el.closest('figure, picture, [class*="image"], [class*="photo"], [class*="media"], [class*="wp-caption"]') ?? (el as unknown as { parentElement: El | null }).parentElement;
    if (box && box.querySelector('img, picture, video, svg')) el.remove();
  }
}

/** Class tokens of an article's byline or date line (`byline`, `post-meta`, `entry-date`, `article-info`). */
const BYLINE_CLASS = /^(?:byline|bylines|dateline|timestamp|pubdate|published|posted-on|(?:post|entry|article|story|news)[-_]+(?:meta|byline|author|authors|date|dates|info|details|time)|(?:author|meta)[-_]*(?:info|line|byline|name|data)|article__(?:byline|meta|date)|c-byline|o-byline)$/i;

/**
 * Removes the byline and date lines of the article (the record carries them as fields): short
 * elements of a byline or meta class. A long element under such a class, or one holding headings
 * or an article, stays (it is content whatever its name says). Lines of those shapes without such
 * a class are taken out of the text afterwards (withoutMetaLines).
 */
function removeBylines(doc: Doc): void {
  for (const el of all(doc, '[class]')) {
    if (!(el.getAttribute('class') ?? '').split(/\s+/).some((t) => BYLINE_CLASS.test(t))) continue;
    if (collapse(el.textContent).length > 200 || el.querySelector('p p, h1, h2, article')) continue;
    el.remove();
  }
}

/** Readability over `doc` (which it mutates); null when it finds nothing usable. */
function readabilityText(doc: Doc, url: string | undefined): { title: string; text: string; byline: string } | null {
  if (url) {
    // Lets Readability resolve relative links; linkedom has no document URL of its own.
    const base = doc.createElement('base');
    base.setAttribute('href', url);
    doc.head?.prepend(base);
  }
  removeNoiseBoxes(doc);
  removeCaptions(doc);
  removeBylines(doc);
  let article: { title?: string | null; content?: string | null; byline?: string | null } | null;
  try {
    article = new Readability(doc as never, { keepClasses: false }).parse();
  } catch {
    return null;
  }
  if (!article?.content) return null;
  const content = parse(`<!doctype html><html><body>${article.content}</body></html>`);
  return { title: collapse(article.title), text: domToText(content.body as unknown as DomNode), byline: collapse(article.byline) };
}

const norm = (s: string): string => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim();

/** The <title> without the site's name: `Headline – Site`, `Site | Headline`. */
function withoutSite(title: string, site: string, host: string, headings: Set<string> = new Set()): string {
  const all = title.split(/\s+(?:[|\-–—·•»~/]|::)\s+/).map((p) => p.trim()).filter(Boolean);
  // A section label ("Press Release - ...", "News | ...") is no part of the page's name.
  const parts = all.length > 1 ? all.filter((p) => !SECTION_LABEL.test(p)) : all;
  if (parts.length === 1 && all.length > 1) return parts[0];
  if (parts.length < 2) return title;
  // The part that is the article's own <h1> is the page's name ("Blackhouse - Wikipedia" over <main><h1>Blackhouse</h1>).
  const shown = parts.filter((p) => headings.has(norm(p)));
  if (shown.length === 1) return shown[0];
  const siteKeys = [norm(site), norm(host.replace(/^www\./, '')), norm(host.replace(/^www\./, '').split('.')[0])].filter(Boolean);
  const isSite = (p: string) => siteKeys.some((k) => norm(p) === k || (k.length > 3 && norm(p).replace(/ /g, '') === k.replace(/ /g, '')));
  const kept = parts.filter((p) => !isSite(p));
  if (kept.length && kept.length < parts.length) return kept.length === 1 ? kept[0] : withoutSite(kept.join(' - '), '', '');
  // No known site name: a short last part is the site when the rest is a headline.
  const words = (p: string) => p.split(/\s+/).length;
  const last = parts[parts.length - 1];
  const restLast = parts.slice(0, -1).join(' - ');
  if (words(last) <= 3 && words(restLast) >= 3) return title.slice(0, title.lastIndexOf(last)).replace(/\s+(?:[|\-–—·•»~/]|::)\s*$/, '').trim();
  return title;
}

/**
 * The site's name as the <title> states it when no metadata does: the other part of a two-part
 * <title> whose one part is the page's chosen title (`Headline | Site`, `Site – Headline`).
 */
function siteInTitle(tag: string, title: string): string | null {
  const parts = tag.split(/\s+(?:[|\-–—·•»~/]|::)\s+/).map((p) => p.trim()).filter(Boolean);
  if (parts.length !== 2 || !title) return null;
  const i = parts.findIndex((p) => norm(p) === norm(title));
  if (i < 0) return null;
  const other = parts[1 - i];
  return other.length <= 80 && !SECTION_LABEL.test(other) && !GENERIC_TITLE.test(other) ? other : null;
}

const SECTION_LABEL = /^(press release|press releases|news release|newsroom|news|blog|article|opinion|home|homepage|pressemitteilung|communiqué de presse|nota de prensa|comunicado de prensa|comunicato stampa)$/i;

const GENERIC_TITLE = /^(home|homepage|home page|index|untitled|untitled document|welcome|main|default|blog|news|article|page|document|loading\.*)$/i;

/**
 * The page's title as a reader names it, from the signals a reader uses: og:title (or
 * twitter:title), the JSON-LD headline, the main <h1> (inside the article or main region, or the
 * only one), and the <title> with the site's name split off. Explicit metadata wins; the <h1>
 * wins over the <title> when the <title> is generic ("Home") or only the site's name, and, when
 * it sits in the article or main region, when the <title> contains it (`Headline – Site`) or is
 * contained in it (a title cut short).
 */
function chooseTitle(doc: Doc, url: string | undefined): string {
  let host = '';
  try {
    host = url ? new URL(url).hostname : '';
  } catch {
    host = '';
  }
  const ld = jsonLd(doc);
  const article = ldArticle(ld);
  const site = siteName(doc, ld);
  const tag = collapse(doc.querySelector('title')?.textContent);
  const headings = new Set(all(doc, 'article h1, main h1, [role=main] h1').map((h) => norm(collapse(h.textContent))).filter(Boolean));
  const title = withoutSite(tag, site, host, headings);
  const h1s = all(doc, 'h1').filter((h) => !h.closest('header:not(article header), nav, footer, aside') || h.closest('article, main, [role=main]'));
  const inMain = h1s.find((h) => h.closest('article, main, [role=main]'));
  const mainH1 = inMain ?? (h1s.length === 1 ? h1s[0] : undefined);
  const h1 = collapse(mainH1?.textContent);
  const og = withoutSite(meta(doc, 'meta[property="og:title"]', 'meta[name="twitter:title"]', 'meta[property="twitter:title"]'), site, host, headings);
  const named = article?.headline ?? article?.name;
  const headline = collapse(typeof named === 'string' ? named : undefined);
  const usable = (t: string) => t.length > 1 && !GENERIC_TITLE.test(t) && norm(t) !== norm(site);
  if (headline && usable(headline) && !(h1 && norm(headline) !== norm(h1) && norm(h1).startsWith(norm(headline)))) {
    // A headline cut short in metadata loses to the full <h1>.
    return headline;
  }
  if (headline && h1 && usable(h1)) return h1;
  if (og && usable(og)) return h1 && usable(h1) && norm(h1).startsWith(norm(og)) && h1.length > og.length ? h1 : og;
  if (h1 && usable(h1)) {
    const nt = norm(title);
    const nh = norm(h1);
    // An <h1> outside the article (a landing page's slogan) names the page only when the <title> does not.
    if (!usable(title) || norm(tag) === norm(site) || (inMain && (nt.includes(nh) || nh.includes(nt)))) return h1;
  }
  if (usable(title)) return title;
  return h1 || title || tag;
}

/**
 * A post whose body ships inside `<noscript>` or a client-side template (`<script
 * type="text/template">` and kin) has no DOM text until a script runs; this turns those into
 * ordinary elements, for a second pass when the first finds too little.
 */
const HIDDEN_BODY = /<noscript(?:\s[^>]*)?>([\s\S]*?)<\/noscript\s*>|<script\b[^>]*\btype\s*=\s*["']?text\/(?:template|x-template|html|x-html|x-handlebars-template|x-handlebars|ng-template|x-tmpl|x-jsrender|x-underscore-template|x-mustache)\b[^>]*>([\s\S]*?)<\/script\s*>/gi;

/** Title and main text of an HTML document. */
export function extractHtml(html: string, url?: string): Extracted {
  const first = extractOnce(html, url);
  if (weightedLength(first.text) >= MIN_ARTICLE_CHARS || !HIDDEN_BODY.test(html)) return first;
  HIDDEN_BODY.lastIndex = 0;
  const shown = extractOnce(html.replace(HIDDEN_BODY, (_m, noscript: string | undefined, template: string | undefined) => `<div>${noscript ?? template ?? ''}</div>`), url);
  return shown.text.length > first.text.length ? { ...shown, title: first.title || shown.title } : first;
}

/**
 * TeX sources of formulas that a script typesets in the browser (MathJax's `<script
 * type="math/tex">`) become text, as a reader sees the typeset formula.
 */
const TEX_SCRIPT = /<script\b[^>]*\btype\s*=\s*["']?math\/tex(?:;\s*mode=(display))?[^>]*>([\s\S]*?)<\/script\s*>/gi;

function extractOnce(html: string, url?: string): Extracted {
  if (html.includes('math/tex')) html = html.replace(TEX_SCRIPT, (_m, display: string | undefined, tex: string) => `<${display ? 'div' : 'span'} class="math-tex">${tex.replace(/</g, '&lt;')}</${display ? 'div' : 'span'}>`);
  const doc = parse(html);
  const title = chooseTitle(doc, url);
  const meta = pageMeta(doc);
  meta.site_name ??= siteInTitle(collapse(doc.querySelector('title')?.textContent), title);
  // Parsing dominates on big pages, so the second parse happens only when Readability ran.
  if (doc.querySelectorAll('*').length > MAX_ELEMENTS) return { title, text: withoutHeadline(withoutMetaLines(fallbackText(doc), meta), title), meta, method: 'fallback' };
  const article = readabilityText(doc, url);
  if (!meta.byline && article?.byline) meta.byline = cleanByline(article.byline) || null;
  if (article && weightedLength(article.text) >= MIN_ARTICLE_CHARS) {
    const t = title || article.title;
    return { title: t, text: withoutHeadline(withoutMetaLines(article.text, meta), t), meta, method: 'readability' };
  }
  const t = title || article?.title || '';
  return { title: t, text: withoutHeadline(withoutMetaLines(fallbackText(parse(html)), meta), t), meta, method: 'fallback' };
}

/** A byline line: "By Jane Doe", "Par Claire Vasseur (envoyée spéciale)", "by OldChippy » Sat Mar 09, 2024". */
const BYLINE_LINE = /^(?:(?:written|posted|words|interview|reporting|text|photos?)\s+by|by|von|par|por|di|door|av|af|przez|от|автор:?)\s+\p{Lu}/iu;
/** A date line: "Posted March 18, 2024", "30/01/2025 18h47 Atualizado há 2 horas", "asked Jan 15, 2024 at 9:41". */
const DATE_LINE_START = /^(?:\d|(?:posted|published|updated|modified|asked|answered|edited|publié|mis à jour|publicado|actualizado|atualizado|veröffentlicht|aktualisiert|gepubliceerd|publicerat|opublikowano|pubblicato|aggiornato|yayınlanma|опубликовано)\b|(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\b)/iu;
/** A profile line of a forum post: "Posts: 41", "Joined: Tue Oct 03, 2023". */
const PROFILE_LINE = /^(?:posts|joined|location|reputation|member since|registered|beiträge|registriert|wohnort|messages|inscrit|mensajes|registrado)\s*:/i;

/**
 * The text without the byline, date and forum-profile lines that Readability keeps with the
 * article (the record carries the byline and date as fields). Only short lines of those shapes
 * go; a sentence that mentions a date ("The museum opened on 5 March 2024.") stays. A byline line
 * near the top names the byline when the page's metadata did not.
 */
function withoutMetaLines(text: string, meta: PageMeta): string {
  const lines = text.split('\n');
  const kept: string[] = [];
  lines.forEach((line, i) => {
    const t = line.trim();
    // Code and logs (`2024-03-05 12:00:01 INFO started`, `by(x) = ...`) are never meta lines.
    const code = /[{}()[\];=<>$`\\]/.test(t) || /^\d{4}-\d{2}-\d{2}[T ]?\S*\s+\S+\s+\S/.test(t) || t.includes('\t');
    if (t.length > 0 && t.length <= 120 && !/[.!?;]$/.test(t) && !code) {
      const words = t.split(/\s+/).length;
      if (BYLINE_LINE.test(t) && words <= 14) {
        if (!meta.byline && i < 8) meta.byline = cleanByline(t) || null;
        return;
      }
      if (DATE_LINE_START.test(t) && words <= 10 && normalizeDate(t)) return;
      if (PROFILE_LINE.test(t)) return;
    }
    kept.push(line);
  });
  return kept.join('\n').replace(/\n{3,}/g, '\n\n').replace(/^\n+/, '');
}

/** The text without its first line when that line is the title (the record carries the title). */
function withoutHeadline(text: string, title: string): string {
  const nl = text.indexOf('\n');
  const first = nl < 0 ? text : text.slice(0, nl);
  if (!title || norm(first) !== norm(title)) return text;
  return text.slice(first.length).replace(/^\n+/, '');
}

/** Title and text of any fetched body; throws WebError for unsupported types. */
export function extractContent(input: { body: Buffer; contentType: string; url?: string }): Extracted {
  const kind = classifyBody(input.contentType, input.body);
  const decoded = decodeBody(input.body, input.contentType, kind);
  if (kind === 'html') return extractHtml(decoded, input.url);
  return { title: '', text: decoded.replace(/\r\n?/g, '\n').trim(), meta: { ...NO_META }, method: 'plain' };
}
