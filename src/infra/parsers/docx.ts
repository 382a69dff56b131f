/**
 * DOCX with mammoth: its HTML keeps the structure plain text loses (headings, list items, tables),
 * which is then walked with linkedom into text blocks and table blocks. Images are never decoded
 * (mammoth would otherwise inline them as base64). Headings become their own blocks so chunks can
 * name the section they fall in. Nested tables are flattened into their cell's text.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Block, Extracted } from './assemble';
import type { Budget } from './budget';
import { corrupt, describeError, ParseFailure } from './errors';
import { openOoxml, readCoreProperties } from './ooxml';
import { needsRewrite, relationships, rewriteMainPart, type PartReader } from './docx-parts';

const require = createRequire(import.meta.url);
type Mammoth = typeof import('mammoth');
type Linkedom = typeof import('linkedom');
let libs: { mammoth: Mammoth; linkedom: Linkedom } | undefined;
const load = () => (libs ??= { mammoth: require('mammoth') as Mammoth, linkedom: require('linkedom') as Linkedom });

// Minimal DOM surface used here (linkedom's own types are loose).
interface Node { nodeType: number; textContent: string | null; childNodes: ArrayLike<Node> }
interface Element extends Node { tagName: string; children: ArrayLike<Element> }

export async function extractDocx(path: string, budget: Budget): Promise<Extracted> {
  const zip = await openOoxml(path, 'docx', budget.limits);
  const meta = await readCoreProperties(zip);
  const { mammoth, linkedom } = load();
  let html: string;
  let messages: { type: string; message: string }[];
  const warnings: string[] = [];
  try {
    // Ruby, altChunk, chart and diagram text are put into the main part before mammoth reads it
    // (docx-parts.ts); a document without them goes to mammoth untouched.
    let input: { path: string } | { file: PartReader } = { path };
    const main = await zip.readText('word/document.xml', budget.limits.maxUnzippedBytes);
    if (main !== undefined && needsRewrite(main)) {
      const zipfile = require('mammoth/lib/zipfile') as { openArrayBuffer(b: Buffer): Promise<PartReader & { read(name: string, encoding?: string): Promise<unknown> }> };
      const file = await zipfile.openArrayBuffer(await readFile(path));
      const rewritten = await rewriteMainPart(main, relationships(await zip.readText('word/_rels/document.xml.rels')), file, warnings);
      const read = file.read.bind(file);
      file.read = ((name: string, encoding?: string) => (name === 'word/document.xml'
        ? Promise.resolve(encoding ? rewritten : new TextEncoder().encode(rewritten))
        : read(name, encoding))) as typeof file.read;
      input = { file };
    }
    const result = await mammoth.convertToHtml(input as Parameters<Mammoth['convertToHtml']>[0], {
      convertImage: mammoth.images.imgElement(async () => ({ src: '' })),
      includeEmbeddedStyleMap: false,
      ignoreEmptyParagraphs: true,
    } as Parameters<Mammoth['convertToHtml']>[1]);
    html = result.value;
    messages = result.messages;
  } catch (e) {
    if (e instanceof ParseFailure) throw e;
    throw corrupt(`DOCX could not be read: ${describeError(e)}`, e);
  }
  const { document } = linkedom.parseHTML(`<!doctype html><html><body>${html}</body></html>`);
  const blocks = htmlBlocks(document.body as unknown as Element, budget);
  return {
    blocks,
    meta,
    warnings: [...warnings, ...messages.filter((m) => m.type !== 'info').map((m) => m.message)],
    parser: 'mammoth',
  };
}

function htmlBlocks(body: Element, budget: Budget): Block[] {
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
      heading = textOf(el).replace(/\s+/g, ' ').trim();
      addText(heading, true);
    } else if (tag === 'ul' || tag === 'ol') {
      addText(listText(el, 0));
    } else if (tag === 'table') {
      if (budget.textFull) { budget.truncate('text'); return; }
      const rows: string[][] = [];
      const numbers: number[] = [];
      let truncated = false;
      const source = tableRows(el);
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
      addText(textOf(el));
    } else if (tag === 'div' || tag === 'section') {
      for (const child of Array.from(el.children)) walk(child);
    } else {
      addText(textOf(el));
    }
  };
  for (const child of Array.from(body.children)) walk(child);
  return blocks;
}

/** Text of an element with <br> as a newline and nested blocks on their own lines. */
function textOf(node: Node): string {
  if (node.nodeType === 3) return node.textContent ?? '';
  if (node.nodeType !== 1) return '';
  const el = node as Element;
  const tag = el.tagName.toLowerCase();
  if (tag === 'br') return '\n';
  if (tag === 'img') return '';
  const inner = Array.from(el.childNodes).map(textOf).join('');
  return /^(p|li|tr|h[1-6]|table|ul|ol)$/.test(tag) ? `${inner}\n` : tag === 'td' || tag === 'th' ? `${inner} ` : inner;
}

function listText(list: Element, depth: number): string {
  const lines: string[] = [];
  const ordered = list.tagName.toLowerCase() === 'ol';
  let n = 0;
  for (const li of Array.from(list.children)) {
    if (li.tagName.toLowerCase() !== 'li') continue;
    n++;
    const own = Array.from(li.childNodes).filter((c) => !(c.nodeType === 1 && /^(ul|ol)$/i.test((c as Element).tagName)));
    const text = own.map(textOf).join('').replace(/\s+/g, ' ').trim();
    lines.push(`${'  '.repeat(depth)}${ordered ? `${n}.` : '-'} ${text}`);
    for (const sub of Array.from(li.children)) {
      if (/^(ul|ol)$/i.test(sub.tagName)) lines.push(listText(sub, depth + 1));
    }
  }
  return lines.join('\n');
}

/** Cell texts of a table's own rows (not those of tables nested in its cells). */
function tableRows(table: Element): string[][] {
  const rows: string[][] = [];
  const visit = (el: Element) => {
    for (const child of Array.from(el.children)) {
      const tag = child.tagName.toLowerCase();
      if (tag === 'tr') {
        rows.push(Array.from(child.children)
          .filter((c) => /^t[dh]$/i.test(c.tagName))
          .map((c) => textOf(c).replace(/\s+/g, ' ').trim()));
      } else if (tag === 'thead' || tag === 'tbody' || tag === 'tfoot') visit(child);
    }
  };
  visit(table);
  return rows;
}
