/**
 * DOCX with mammoth: its HTML keeps the structure plain text loses (headings, list items, tables),
 * which is then walked with linkedom into text blocks and table blocks. Images are never decoded
 * (mammoth would otherwise inline them as base64). Headings become their own blocks so chunks can
 * name the section they fall in. Nested tables are flattened into their cell's text.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { Block, Extracted } from './assemble';
import { Budget } from './budget';
import { corrupt, describeError, ParseFailure } from './errors';
import { openOoxml, readCoreProperties, unescapeXml } from './ooxml';
import type { ZipArchive } from './zip';
import { extractXlsx } from './xlsx';
import { relationships, relationshipTypes, rewriteMainPart, type PartReader } from './docx-parts';
import { formatNumber, labelEnd, labelStart } from './docx-numbering';

const require = createRequire(import.meta.url);
type Mammoth = typeof import('mammoth');
type Linkedom = typeof import('linkedom');
let libs: { mammoth: Mammoth; linkedom: Linkedom } | undefined;
const load = () => (libs ??= { mammoth: require('mammoth') as Mammoth, linkedom: require('linkedom') as Linkedom });

/** Loads the libraries a DOCX parse uses (a runner warming up before its first job). */
export function preloadDocx(): void {
  load();
  require('mammoth/lib/zipfile');
}

// Minimal DOM surface used here (linkedom's own types are loose).
interface Node { nodeType: number; textContent: string | null; childNodes: ArrayLike<Node> }
interface Element extends Node { tagName: string; children: ArrayLike<Element> }

export async function extractDocx(path: string, budget: Budget, depth = 0): Promise<Extracted> {
  const zip = await openOoxml(path, 'docx', budget.limits);
  const meta = await readCoreProperties(zip);
  const { mammoth, linkedom } = load();
  let html: string;
  let messages: { type: string; message: string }[];
  const warnings: string[] = [];
  let main: string | undefined;
  try {
    // What mammoth does not read (ruby, altChunk, chart and diagram text, text boxes without a
    // fallback, headers and footers, list numbers as displayed) is put into the main part before
    // mammoth reads it (docx-parts.ts). mammoth opens the same bytes it would read from the path.
    let input: { path: string } | { file: PartReader } = { path };
    main = await zip.readText('word/document.xml', budget.limits.maxUnzippedBytes);
    if (main !== undefined) {
      const zipfile = require('mammoth/lib/zipfile') as { openArrayBuffer(b: Buffer): Promise<PartReader & { read(name: string, encoding?: string): Promise<unknown> }> };
      const file = await zipfile.openArrayBuffer(await readFile(path));
      const relsXml = await zip.readText('word/_rels/document.xml.rels');
      const rewritten = await rewriteMainPart(main, relationships(relsXml), file, warnings, relationshipTypes(relsXml), depth === 0 ? embeddedReader(file, budget, warnings) : undefined);
      if (rewritten !== main) {
        const read = file.read.bind(file);
        file.read = ((name: string, encoding?: string) => (name === 'word/document.xml'
          ? Promise.resolve(encoding ? rewritten : new TextEncoder().encode(rewritten))
          : read(name, encoding))) as typeof file.read;
      }
      input = { file };
    }
    const result = await mammoth.convertToHtml(input as Parameters<Mammoth['convertToHtml']>[0], {
      convertImage: mammoth.images.imgElement(async () => ({ src: '' })),
      includeEmbeddedStyleMap: false,
      ignoreEmptyParagraphs: true,
      // Comments are read (mammoth drops them otherwise): a `[AL1]` mark where they are anchored, their
      // text after the notes, marked as comments with their author.
      styleMap: ['comment-reference => sup'],
    } as Parameters<Mammoth['convertToHtml']>[1]);
    html = result.value;
    messages = result.messages;
  } catch (e) {
    if (e instanceof ParseFailure) throw e;
    throw corrupt(`DOCX could not be read: ${describeError(e)}`, e);
  }
  const { document } = linkedom.parseHTML(`<!doctype html><html><body>${html}</body></html>`);
  const notes = await noteContext(zip, main ?? '', document as unknown as Queryable);
  const blocks = htmlBlocks(document.body as unknown as Element, budget, notes);
  return {
    blocks,
    meta,
    // mammoth's note on OLE objects is left out: docx-parts.ts reads them (or says why not).
    warnings: [...warnings, ...messages.filter((m) => m.type !== 'info' && !m.message.endsWith('}OLEObject')).map((m) => m.message)],
    parser: 'mammoth',
  };
}

/**
 * Reads an embedded package (a Word document or an Excel workbook inside this one) as if it had
 * been uploaded: written to a private temporary file, through the ZIP guard and the extractor, with
 * the parse's limits, one level deep (what it embeds in turn is not read). Its text comes back as
 * lines: paragraphs, and table rows as `a | b`.
 */
function embeddedReader(file: { read(name: string): Promise<unknown> }, budget: Budget, warnings: string[]) {
  return async (part: string): Promise<string[] | undefined> => {
    const xlsx = /\.xl[st][xm]$/i.test(part);
    const dir = await mkdtemp(join(tmpdir(), 'svc-embedded-'));
    try {
      const path = join(dir, xlsx ? 'embedded.xlsx' : 'embedded.docx');
      await writeFile(path, (await file.read(part)) as Uint8Array);
      const inner = new Budget(budget.limits);
      const extracted = xlsx ? await extractXlsx(path, inner) : await extractDocx(path, inner, 1);
      warnings.push(...extracted.warnings.map((w) => `${part}: ${w}`));
      return extracted.blocks.flatMap((b) => (b.type === 'text' ? b.text.split('\n') : b.rows.map((r) => r.join(' | ')))).map((l) => l.trim()).filter((l) => l !== '');
    } catch (e) {
      warnings.push(`an embedded part (${part}) was not read: ${describeError(e)}`);
      return [];
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
}

interface Queryable { querySelectorAll(selector: string): ArrayLike<Element & { getAttribute(name: string): string | null }> }

/** How notes and comments are shown: each note's mark as Word displays it, each comment's author. */
interface Notes { labels: Map<string, string>; authors: Map<string, string> }

/**
 * Footnotes and endnotes are numbered apart, as Word shows them (footnotes 1, 2…, endnotes i, ii…
 * unless the document sets another format or start); mammoth numbers them in one sequence.
 */
async function noteContext(zip: ZipArchive, main: string, document: Queryable): Promise<Notes> {
  const settings = (await zip.readText('word/settings.xml').catch(() => undefined)) ?? '';
  const sections = main.match(/<w:sectPr\b[\s\S]*?<\/w:sectPr>/g) ?? [];
  const lastSection = sections[sections.length - 1] ?? '';
  const notePr = (kind: 'footnote' | 'endnote') => {
    const pr = new RegExp(`<w:${kind}Pr>([\\s\\S]*?)</w:${kind}Pr>`);
    const props = pr.exec(lastSection)?.[1] ?? pr.exec(settings)?.[1] ?? '';
    return {
      format: /<w:numFmt w:val="([^"]+)"/.exec(props)?.[1] ?? (kind === 'footnote' ? 'decimal' : 'lowerRoman'),
      start: Number(/<w:numStart w:val="(\d+)"/.exec(props)?.[1] ?? 1),
    };
  };
  const labels = new Map<string, string>();
  for (const kind of ['footnote', 'endnote'] as const) {
    const { format, start } = notePr(kind);
    let n = start;
    for (const a of Array.from(document.querySelectorAll(`a[id^="${kind}-ref-"]`))) {
      const target = a.getAttribute('href')?.slice(1);
      if (target && !labels.has(target)) labels.set(target, formatNumber(n++, format));
    }
  }
  const authors = new Map<string, string>();
  const comments = await zip.readText('word/comments.xml').catch(() => undefined);
  for (const m of (comments ?? '').matchAll(/<w:comment\b([^>]*)>/g)) {
    const id = /\bw:id="([^"]*)"/.exec(m[1]!)?.[1];
    const author = /\bw:author="([^"]*)"/.exec(m[1]!)?.[1];
    if (id !== undefined && author) authors.set(`comment-${id}`, unescapeXml(author));
  }
  return { labels, authors };
}

function htmlBlocks(body: Element, budget: Budget, notes: Notes): Block[] {
  const blocks: Block[] = [];
  let heading: string | undefined;
  const addText = (text: string, isHeading = false) => {
    const t = text.trim();
    if (t === '') return;
    if (budget.textFull) { budget.truncate('text'); return; }
    blocks.push({ type: 'text', text: t, ...(isHeading ? { heading: true } : {}) });
    budget.addText(t.length + 2);
  };
  const walk = (el: Element) => {
    const tag = el.tagName.toLowerCase();
    if (/^h[1-6]$/.test(tag)) {
      heading = textOf(el, notes).replace(/\s+/g, ' ').trim();
      addText(heading, true);
    } else if ((tag === 'ol' || tag === 'ul') && isNoteList(el)) {
      // Footnotes, then endnotes, after the body: `[1] text`, `[i] text`.
      const items = Array.from(el.children).map((li) => ({ li, id: (li as unknown as { id?: string }).id ?? '' }));
      const rank = (id: string) => (id.startsWith('footnote-') ? 0 : 1);
      for (const { li, id } of items.sort((a, b) => rank(a.id) - rank(b.id))) {
        addText(`[${notes.labels.get(id) ?? '?'}] ${textOf(li, notes).replace(/\s+/g, ' ').trim()}`);
      }
    } else if (tag === 'dl') {
      // Comments: `Comment [AL1] (Ann Lee): text`.
      let mark = '';
      let author: string | undefined;
      for (const child of Array.from(el.children)) {
        const t = child.tagName.toLowerCase();
        if (t === 'dt') {
          mark = textOf(child, notes).replace(/^\s*Comment\s*/, '').trim();
          author = notes.authors.get((child as unknown as { id?: string }).id ?? '');
        } else if (t === 'dd') {
          addText(`Comment${mark ? ` ${mark}` : ''}${author ? ` (${author})` : ''}: ${textOf(child, notes).replace(/\s+/g, ' ').trim()}`);
        }
      }
    } else if (tag === 'ul' || tag === 'ol') {
      addText(listText(el, 0, notes));
    } else if (tag === 'table') {
      if (budget.textFull) { budget.truncate('text'); return; }
      const rows: string[][] = [];
      const numbers: number[] = [];
      let truncated = false;
      const source = tableRows(el, notes);
      source.forEach((cells, i) => {
        const kept = budget.takeRow(cells);
        if (kept === undefined) truncated = true;
        else if (kept.length > 0) { rows.push(kept); numbers.push(i + 1); }
      });
      if (rows.length === 0) return;
      blocks.push({
        type: 'table', source: { kind: 'docx', ...(heading ? { heading } : {}) }, rows, row_numbers: numbers,
        row_count: source.length, truncated, header: rows.length > 1, ...(heading ? { caption: heading } : {}),
      });
    } else if (tag === 'p' || tag === 'blockquote' || tag === 'pre') {
      addText(textOf(el, notes));
    } else if (tag === 'div' || tag === 'section') {
      for (const child of Array.from(el.children)) walk(child);
    } else {
      addText(textOf(el, notes));
    }
  };
  for (const child of Array.from(body.children)) walk(child);
  return blocks;
}

const isNoteList = (el: Element) => {
  const first = el.children[0] as unknown as { id?: string } | undefined;
  return /^(footnote|endnote)-/.test(first?.id ?? '');
};

/** A list number put in the text by docx-numbering.ts, and the text after it. */
const labelled = new RegExp(`^\\s*${labelStart}([^${labelEnd}]*)${labelEnd}\\s*`);
const labels = new RegExp(`${labelStart}([^${labelEnd}]*)${labelEnd}\\s*`, 'g');

/**
 * Text of an element with <br> as a newline and nested blocks on their own lines; a list number as
 * displayed before its paragraph; a note reference as its displayed mark (`[1]`, `[i]`), the
 * notes' and comments' links back to the text left out.
 */
function textOf(node: Node, notes: Notes): string {
  return rawText(node, notes).replace(labels, (_, label: string) => (label === '' ? '' : `${label} `));
}

/** Like textOf, with the list-number markers of docx-numbering.ts still in place. */
function rawText(node: Node, notes: Notes): string {
  if (node.nodeType === 3) return node.textContent ?? '';
  if (node.nodeType !== 1) return '';
  const el = node as Element;
  const tag = el.tagName.toLowerCase();
  if (tag === 'br') return '\n';
  if (tag === 'img') return '';
  if (tag === 'a') {
    const href = (el as unknown as { getAttribute(n: string): string | null }).getAttribute('href') ?? '';
    if (/^#(footnote|endnote|comment)-ref-/.test(href)) return '';
    const label = notes.labels.get(href.slice(1));
    if (label !== undefined) return `[${label}]`;
  }
  const inner = Array.from(el.childNodes).map((c) => rawText(c, notes)).join('');
  return /^(p|li|tr|h[1-6]|table|ul|ol)$/.test(tag) ? `${inner}\n` : tag === 'td' || tag === 'th' ? `${inner} ` : inner;
}

function listText(list: Element, depth: number, notes: Notes): string {
  const lines: string[] = [];
  const ordered = list.tagName.toLowerCase() === 'ol';
  let n = 0;
  for (const li of Array.from(list.children)) {
    if (li.tagName.toLowerCase() !== 'li') continue;
    n++;
    const own = Array.from(li.childNodes).filter((c) => !(c.nodeType === 1 && /^(ul|ol)$/i.test((c as Element).tagName)));
    const raw = own.map((c) => rawText(c, notes)).join('');
    // The number Word shows (docx-numbering.ts), else mammoth's count.
    const shown = labelled.exec(raw);
    const body = (shown ? raw.slice(shown[0].length) : raw).replace(labels, (_, l: string) => (l === '' ? '' : `${l} `)).replace(/\s+/g, ' ').trim();
    const mark = shown ? shown[1]! : ordered ? `${n}.` : '-';
    lines.push(`${'  '.repeat(depth)}${mark === '' ? '' : `${mark} `}${body}`);
    for (const sub of Array.from(li.children)) {
      if (/^(ul|ol)$/i.test(sub.tagName)) lines.push(listText(sub, depth + 1, notes));
    }
  }
  return lines.join('\n');
}

/** Cell texts of a table's own rows (not those of tables nested in its cells). */
function tableRows(table: Element, notes: Notes): string[][] {
  const rows: string[][] = [];
  const visit = (el: Element) => {
    for (const child of Array.from(el.children)) {
      const tag = child.tagName.toLowerCase();
      if (tag === 'tr') {
        rows.push(Array.from(child.children)
          .filter((c) => /^t[dh]$/i.test(c.tagName))
          .map((c) => textOf(c, notes).replace(/\s+/g, ' ').trim()));
      } else if (tag === 'thead' || tag === 'tbody' || tag === 'tfoot') visit(child);
    }
  };
  visit(table);
  return rows;
}
