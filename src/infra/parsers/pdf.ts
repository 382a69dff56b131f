/**
 * PDF text with pdfjs-dist (legacy build, the one meant for Node). pdfjs reads the file itself from
 * its path (range requests), so the bytes never pass through our code. One text block per page;
 * lines come from pdfjs' end-of-line marks and baseline changes, and a vertical gap larger than
 * 1.5 lines starts a new paragraph so the chunker has boundaries to cut at. Runs inside the parse
 * worker; stops reading pages once the text budget is full.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { open } from 'node:fs/promises';
import type { Extracted, TextBlock } from './assemble';
import { loadPdfjs } from './pdfjs.mjs';
import type { Budget } from './budget';
import { describeBytes, indexOf } from './detect';
import { corrupt, describeError, ParseFailure, tooLarge } from './errors';
import { unescapeXml } from './ooxml';

// The library and its fake worker, loaded once per process (a child process's bootstrap already
// did), with pdfjs' polyfilled built-ins undone and its CJK character-collection choice corrected
// (pdfjs.mjs).
const load = loadPdfjs;

/** Loads pdfjs (a runner warming up before its first job; a child's bootstrap already has). */
export async function preloadPdf(): Promise<void> {
  await load();
}

const packageDir = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
const assets = {
  // Trailing slashes matter: pdfjs appends file names.
  cMapUrl: join(packageDir, 'cmaps') + '/',
  // The standard 14 fonts' programs. Text extraction needs them too, not only rendering: without
  // them pdfjs gives a code the font has no glyph for (a NUL in Helvetica's WinAnsi) the width and
  // text of a space, so "A\0B\0C" reads "A B C" where a reader sees "ABC".
  standardFontDataUrl: join(packageDir, 'standard_fonts') + '/',
};

export async function extractPdf(path: string, budget: Budget): Promise<Extracted> {
  await checkHeader(path);
  const lib = await load();
  const task = lib.getDocument({
    url: pathToFileURL(path),
    ...assets,
    cMapPacked: true,
    isEvalSupported: false, // never compile code from a hostile file
    useSystemFonts: false,
    disableFontFace: true,
    verbosity: 0,
  });
  let doc: Awaited<typeof task.promise>;
  try {
    doc = await task.promise;
  } catch (e) {
    await task.destroy().catch(() => {});
    const name = (e as { name?: string }).name;
    if (name === 'PasswordException') throw new ParseFailure('unsupported', 'PDF is password-protected');
    throw corrupt(`PDF is damaged or not a PDF: ${describeError(e)}`, e);
  }
  try {
    const { maxPages } = budget.limits;
    if (doc.numPages > maxPages) throw tooLarge(`PDF has ${doc.numPages} pages (limit ${maxPages})`);
    const meta = await readMetadata(doc);
    const blocks: TextBlock[] = [];
    const warnings: string[] = [];
    for (let n = 1; n <= doc.numPages; n++) {
      if (budget.textFull) { budget.truncate('text'); break; }
      let text: string;
      try {
        const page = await doc.getPage(n);
        text = pageText((await page.getTextContent()).items as TextItem[]);
        const notes = annotationText(await page.getAnnotations({ intent: 'display' }).catch(() => []));
        if (notes !== '') text = text === '' ? notes : `${text}\n\n${notes}`;
        page.cleanup();
      } catch (e) {
        warnings.push(`page ${n}: ${describeError(e)}`);
        text = '';
      }
      // Empty pages are kept, so page numbers and the pages array stay aligned.
      blocks.push({ type: 'text', text, page: n });
      budget.addText(text.length + 2);
    }
    return { blocks, meta: { ...meta, page_count: doc.numPages }, warnings, parser: `pdfjs-dist ${lib.version}` };
  } finally {
    await doc.destroy().catch(() => {});
  }
}

async function checkHeader(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(1024);
    const { bytesRead } = await fh.read(head, 0, 1024, 0);
    const bytes = head.subarray(0, bytesRead);
    if (indexOf(bytes, '%PDF-', 1024) < 0) throw corrupt(`content does not match its type: expected a PDF document, found ${describeBytes(bytes)}`);
  } finally {
    await fh.close();
  }
}

interface TextItem { str?: string; hasEOL?: boolean; transform?: number[]; height?: number; width?: number }

/**
 * Joins pdfjs text items into lines and paragraphs. An item stays on the current line while its
 * vertical extent overlaps the line's and it continues to the right: a superscript or text rise
 * (`240` then a raised `th`) is part of its line, not a line of its own.
 */
export function pageText(items: TextItem[]): string {
  const lines: { y: number; h: number; text: string }[] = [];
  let parts: string[] = [];
  let y: number | undefined;
  let h = 0;
  let top = 0;
  let bottom = 0;
  let end = 0;
  const endLine = () => {
    const line = joinLine(parts);
    if (line.trim() !== '' && y !== undefined) lines.push({ y, h, text: line.replace(/[ \t]+/g, ' ').trim() });
    parts = [];
    y = undefined;
    h = 0;
  };
  for (const item of items) {
    if (typeof item.str !== 'string') continue; // marked-content items
    const itemY = item.transform?.[5];
    const itemX = item.transform?.[4];
    const itemH = item.height ?? 0;
    if (item.str !== '') {
      if (y !== undefined && itemY !== undefined && Math.abs(itemY - y) > Math.max(2, itemH / 2)) {
        // A baseline change without an EOL mark starts a new line, unless the item overlaps the
        // line vertically and carries on where the line left off (a superscript or subscript).
        const overlaps = itemH > 0 ? itemY < top && itemY + itemH > bottom : itemY <= top && itemY >= bottom;
        const onward = itemX !== undefined && itemX >= end - Math.max(1, h / 2);
        if (!(overlaps && onward)) endLine();
      }
      if (y === undefined && itemY !== undefined) { y = itemY; top = itemY; bottom = itemY; end = itemX ?? 0; }
      if (itemY !== undefined && itemH > 0) { top = Math.max(top, itemY + itemH); bottom = Math.min(bottom, itemY); }
      if (itemX !== undefined) end = Math.max(end, itemX + (item.width ?? 0));
      h = Math.max(h, itemH);
      parts.push(item.str);
    }
    if (item.hasEOL) endLine();
  }
  endLine();
  let out = '';
  for (let i = 0; i < lines.length; i++) {
    const cur = lines[i]!;
    if (i > 0) {
      const prev = lines[i - 1]!;
      const gap = Math.abs(prev.y - cur.y);
      const height = Math.max(prev.h, cur.h, 1);
      out += gap > height * 1.5 ? '\n\n' : '\n';
    }
    out += cur.text;
  }
  return out;
}

/** `H e r e` (pdfjs puts a space between glyphs set apart by character spacing). */
const spacedGlyphs = /^\S( \S)+$/u;

/**
 * The items of one line as text. Letter-spaced words come from pdfjs as one item per word with a
 * space between every glyph (and a space item between words): when every word of the line looks
 * like that, the glyph spaces are dropped (`Here is spaced text`). A lone short item (`x = y`) is
 * left as it is.
 */
function joinLine(parts: string[]): string {
  const words = parts.filter((p) => p.trim() !== '');
  const spaced = words.filter((w) => spacedGlyphs.test(w));
  const letterSpaced = spaced.length > 0 && words.every((w) => spacedGlyphs.test(w) || [...w].length === 1)
    && (spaced.length >= 2 || spaced.some((w) => w.length >= 7));
  if (!letterSpaced) return parts.join('');
  return parts.map((p) => (spacedGlyphs.test(p) ? p.replace(/ /g, '') : p)).join('');
}

interface Annotation { subtype?: string; contentsObj?: { str?: string }; titleObj?: { str?: string }; parentType?: string }

/**
 * Comments a reader opens on the page: the text of markup annotations (sticky notes, free text,
 * highlights with a note…) and of popups, once each, as `Note (author): text` lines.
 */
export function annotationText(annotations: Annotation[]): string {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const a of annotations) {
    if (a.subtype === 'Link' || a.subtype === 'Widget') continue;
    const text = a.contentsObj?.str?.replace(/\r\n?/g, '\n').trim();
    if (!text || seen.has(text)) continue;
    seen.add(text);
    const author = a.titleObj?.str?.trim();
    lines.push(a.subtype === 'FreeText' ? text : `Note${author ? ` (${author})` : ''}: ${text}`);
  }
  return lines.join('\n');
}

interface PdfMetadata { info: object; metadata: { getRaw(): string } | null }

/**
 * Title and authors from the XMP packet when it has them (as Tika does: XMP is what current tools
 * keep up to date, and it holds every author where the Info dictionary has one string), else from
 * the Info dictionary; the other fields from Info, dates falling back to XMP.
 */
async function readMetadata(doc: { getMetadata(): Promise<PdfMetadata> }) {
  const { info, metadata } = await doc.getMetadata().catch((): PdfMetadata => ({ info: {}, metadata: null }));
  const i = info as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 1000) : undefined);
  let x: Xmp = {};
  try { x = xmpFields(metadata?.getRaw() ?? ''); } catch { /* an unreadable packet: Info only */ }
  const authors = x.authors ?? (str(i.Author) ? [str(i.Author)!] : undefined);
  const fields = {
    title: x.title ?? str(i.Title),
    author: authors ? authors.join('; ').slice(0, 1000) : undefined,
    authors: authors && authors.length > 1 ? authors : undefined,
    subject: str(i.Subject),
    keywords: str(i.Keywords),
    creator: str(i.Creator),
    producer: str(i.Producer),
    created_at: pdfDate(str(i.CreationDate)) ?? isoDate(x.created),
    modified_at: pdfDate(str(i.ModDate)) ?? isoDate(x.modified),
    language: str(i.Language),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

interface Xmp { title?: string; authors?: string[]; created?: string; modified?: string }

/**
 * dc:title (the x-default alternative, else the first), every dc:creator, xmp:CreateDate and
 * xmp:ModifyDate (element or attribute form) from an XMP packet.
 */
export function xmpFields(xml: string): Xmp {
  if (!xml.includes('rdf:')) return {};
  const items = (prop: string) => {
    const m = new RegExp(`<${prop}\\b[^>]*>([\\s\\S]*?)</${prop}>`).exec(xml);
    if (!m) return [];
    return [...m[1]!.matchAll(/<rdf:li\b([^>]*)>([\s\S]*?)<\/rdf:li>/g)].map((li) => ({ lang: /xml:lang="([^"]*)"/.exec(li[1]!)?.[1], text: xmlText(li[2]!) }));
  };
  const simple = (prop: string) => {
    const el = new RegExp(`<${prop}>([^<]*)</${prop}>`).exec(xml)?.[1] ?? new RegExp(`\\b${prop}="([^"]*)"`).exec(xml)?.[1];
    return el === undefined ? undefined : xmlText(el) || undefined;
  };
  const titles = items('dc:title').filter((t) => t.text !== '');
  const title = (titles.find((t) => t.lang === 'x-default') ?? titles[0])?.text;
  const authors = [...new Set(items('dc:creator').map((c) => c.text).filter((c) => c !== ''))].map((a) => a.slice(0, 1000)).slice(0, 100);
  return {
    ...(title ? { title: title.slice(0, 1000) } : {}),
    ...(authors.length > 0 ? { authors } : {}),
    ...(simple('xmp:CreateDate') ? { created: simple('xmp:CreateDate') } : {}),
    ...(simple('xmp:ModifyDate') ? { modified: simple('xmp:ModifyDate') } : {}),
  };
}

const xmlText = (s: string) => unescapeXml(s.replace(/<[^>]*>/g, '')).replace(/\s+/g, ' ').trim();

function isoDate(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}

/** `D:20240131120000+01'00'` → ISO 8601, or undefined when it does not parse. */
export function pdfDate(value: string | undefined): string | undefined {
  const m = value && /^D?:?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(Z|[+-]\d{2}'?\d{2}'?)?/.exec(value);
  if (!m) return undefined;
  const [, y, mo = '01', d = '01', hh = '00', mm = '00', ss = '00', tz] = m;
  let zone = 'Z';
  if (tz && tz !== 'Z') zone = `${tz.slice(0, 3)}:${tz.replace(/'/g, '').slice(3, 5) || '00'}`;
  const t = Date.parse(`${y}-${mo}-${d}T${hh}:${mm}:${ss}${zone}`);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}
