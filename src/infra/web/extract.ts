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

export interface Extracted {
  title: string;
  text: string;
  /** How the text was obtained; useful in logs and the extraction bench. */
  method: 'readability' | 'fallback' | 'plain';
}

/** Below this many characters a Readability result is not trusted as the page's content. */
const MIN_ARTICLE_CHARS = 250;
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
const NOISE_CLASS = /(^|[\s_-])(ads?|advert\w*|sponsor\w*|promo\w*|cookie\w*|consent|newsletter|share|sharing|social|breadcrumbs?|sidebar|popup|modal|skip-link)($|[\s_-])/i;

type Doc = ReturnType<typeof parseHTML>['document'];
// The slice of Element we use (the project compiles without the DOM type library).
interface El extends DomNode {
  remove(): void;
  closest(selector: string): El | null;
  getAttribute(name: string): string | null;
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

function collapse(s: string | null | undefined): string {
  return (s ?? '').replace(/\s+/g, ' ').trim();
}

/** Visible text of the page's main region with boilerplate removed. */
function fallbackText(doc: Doc): string {
  for (const el of all(doc, NOISE_SELECTORS)) el.remove();
  // Page-level headers carry logos and menus; headers inside an article carry its title.
  for (const el of all(doc, 'header')) if (!el.closest('article, main, [role=main]')) el.remove();
  removeNoiseBoxes(doc);
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

/** Readability over `doc` (which it mutates); null when it finds nothing usable. */
function readabilityText(doc: Doc, url: string | undefined): { title: string; text: string } | null {
  if (url) {
    // Lets Readability resolve relative links; linkedom has no document URL of its own.
    const base = doc.createElement('base');
    base.setAttribute('href', url);
    doc.head?.prepend(base);
  }
  removeNoiseBoxes(doc);
  let article: { title?: string | null; content?: string | null } | null;
  try {
    article = new Readability(doc as never, { keepClasses: false }).parse();
  } catch {
    return null;
  }
  if (!article?.content) return null;
  const content = parse(`<!doctype html><html><body>${article.content}</body></html>`);
  return { title: collapse(article.title), text: domToText(content.body as unknown as DomNode) };
}

function pageTitle(doc: Doc): string {
  return collapse(doc.querySelector('title')?.textContent) || collapse(doc.querySelector('h1')?.textContent);
}

/** Title and main text of an HTML document. */
export function extractHtml(html: string, url?: string): Extracted {
  const doc = parse(html);
  const title = pageTitle(doc);
  // Parsing dominates on big pages, so the second parse happens only when Readability ran.
  if (doc.querySelectorAll('*').length > MAX_ELEMENTS) return { title, text: fallbackText(doc), method: 'fallback' };
  const article = readabilityText(doc, url);
  if (article && article.text.length >= MIN_ARTICLE_CHARS) {
    return { title: article.title || title, text: article.text, method: 'readability' };
  }
  return { title: article?.title || title, text: fallbackText(parse(html)), method: 'fallback' };
}

/** Title and text of any fetched body; throws WebError for unsupported types. */
export function extractContent(input: { body: Buffer; contentType: string; url?: string }): Extracted {
  const kind = classifyBody(input.contentType, input.body);
  const decoded = decodeBody(input.body, input.contentType, kind);
  if (kind === 'html') return extractHtml(decoded, input.url);
  return { title: '', text: decoded.replace(/\r\n?/g, '\n').trim(), method: 'plain' };
}
