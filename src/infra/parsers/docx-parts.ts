/**
 * What mammoth does not read from a Word document, put where it can: the main part's XML is
 * rewritten before mammoth sees it, so the text lands in reading order like any other.
 *  - `w:ruby` (phonetic guides, e.g. furigana): mammoth dropped the whole run, base text included.
 *    It becomes the base text followed by the guide in parentheses, as Word's own plain-text
 *    export writes it: `東京(とうきょう)`.
 *  - `w:altChunk` (a part imported as is: HTML, MHT or plain text): its text, one paragraph per
 *    block. An embedded Word document or RTF chunk is not read (a warning says so).
 *  - charts (`c:chart`) and SmartArt diagrams (`dgm:relIds`) inside a drawing: the chart's titles,
 *    series names and category labels, the diagram's text, after the drawing.
 *  - text boxes mammoth cannot see: mammoth reads a drawing for its picture only and an
 *    `mc:AlternateContent` for its VML fallback only, so a DrawingML text box (`wps:txbx`) written
 *    without a fallback was lost. Its content is given to mammoth as the VML text box it reads.
 *  - headers and footers (mammoth reads neither): their text, once per distinct part, as the first
 *    paragraphs (headers) and the last ones (footers) of the body; text boxes in them included.
 *  - list numbers as displayed (docx-numbering.ts).
 */
import { unescapeXml } from './ooxml';
import { labelParagraphs, readNumbering } from './docx-numbering';

export interface PartReader {
  exists(name: string): boolean;
  read(name: string, encoding: 'utf-8'): Promise<string>;
}

/**
 * The text of an embedded Word document or Excel workbook (part name), one line per paragraph or
 * row, or undefined for a kind not read. docx.ts supplies it: the part goes through the same
 * guard and extractor as an uploaded file, one level deep.
 */
export type EmbeddedReader = (part: string) => Promise<string[] | undefined>;

/** Embedded packages read, by extension. */
export const embeddedKinds = /\.(docx|docm|dotx|dotm|xlsx|xlsm|xltx|xltm)$/i;

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const run = (escaped: string) => `<w:r><w:t xml:space="preserve">${escaped}</w:t></w:r>`;
const paragraph = (text: string) => `<w:p>${run(xmlEscape(text))}</w:p>`;


/** Texts (`<w:t>`) inside a piece of WordprocessingML, still escaped. */
const wordTexts = (xml: string) => [...xml.matchAll(/<w:t(?:\s[^>]*)?>([^<]*)<\/w:t>/g)].map((m) => m[1]!).join('');

export async function rewriteMainPart(xml: string, rels: Map<string, string>, parts: PartReader, warnings: string[], relTypes: Map<string, string> = new Map(), embedded?: EmbeddedReader): Promise<string> {
  // Ruby: the guide (w:rt) and the base (w:rubyBase) each hold runs; only their text is kept, in
  // the run that held the ruby element.
  let out = xml.replace(/<w:ruby>([\s\S]*?)<\/w:ruby>/g, (_, inner: string) => {
    const guide = wordTexts(/<w:rt>([\s\S]*?)<\/w:rt>/.exec(inner)?.[1] ?? '');
    const base = wordTexts(/<w:rubyBase>([\s\S]*?)<\/w:rubyBase>/.exec(inner)?.[1] ?? '');
    return `<w:t xml:space="preserve">${base}${guide ? `(${guide})` : ''}</w:t>`;
  });

  out = await replaceAsync(out, /<w:altChunk\b[^>]*\br:id="([^"]+)"[^>]*?(?:\/>|>[\s\S]*?<\/w:altChunk>)/g, async (_, id: string) => {
    const target = rels.get(id);
    if (!target || !parts.exists(target)) return '';
    // An imported Word document: its text, through the same extractor, one level deep.
    const paragraphs = embeddedKinds.test(target) && embedded
      ? await embedded(target)
      : altChunkText(await parts.read(target, 'utf-8'), target);
    if (paragraphs === undefined) {
      warnings.push(`an embedded part (${target}) was not read: only HTML, MHT, plain-text and Office Open XML chunks are`);
      return '';
    }
    return paragraphs.map(paragraph).join('');
  });

  // Embedded documents (OLE objects shown as an icon or a preview): a Word document's or an Excel
  // workbook's text after the object, in the same run; other kinds add a warning.
  out = await replaceAsync(out, /<w:object\b[\s\S]*?<\/w:object>/g, async (object) => {
    const ole = /<o:OLEObject\b([^>]*)/.exec(object)?.[1];
    if (!ole || /\bType="Link"/.test(ole)) return object;
    const target = rels.get(/\br:id="([^"]+)"/.exec(ole)?.[1] ?? '');
    if (!target || !parts.exists(target)) return object;
    const readable = embeddedKinds.test(target);
    const lines = readable && embedded ? await embedded(target) : undefined;
    if (lines === undefined) {
      warnings.push(`an embedded object (${target}) was not read: ${readable ? 'embedded documents are read one level deep' : 'only Word documents and Excel workbooks are'}`);
      return object;
    }
    return lines.length === 0 ? object : `${object}${lines.map((l) => `<w:br/><w:t xml:space="preserve">${xmlEscape(l)}</w:t>`).join('')}<w:br/>`;
  });

  // Charts and diagrams: their text after the drawing that shows them, in the same run.
  out = await replaceAsync(out, /<w:drawing>[\s\S]*?<\/w:drawing>/g, async (drawing) => {
    const ids = [
      ...[...drawing.matchAll(/<c:chart\b[^>]*\br:id="([^"]+)"/g)].map((m) => m[1]!),
      ...[...drawing.matchAll(/<dgm:relIds\b[^>]*\br:dm="([^"]+)"/g)].map((m) => m[1]!),
    ];
    const texts: string[] = [];
    for (const id of ids) {
      const target = rels.get(id);
      if (!target || !parts.exists(target)) continue;
      const text = graphicText(await parts.read(target, 'utf-8'));
      if (text) texts.push(text);
    }
    return texts.length === 0 ? drawing : `${drawing}${texts.map((t) => `<w:br/><w:t xml:space="preserve">${t}</w:t>`).join('')}<w:br/>`;
  });

  out = visibleTextBoxes(out);

  // List numbers, from the numbering part and the paragraph styles.
  const partOf = (type: string) => [...relTypes].find(([, t]) => t === type)?.[0];
  const numberingPart = rels.get(partOf('numbering') ?? '') ?? 'word/numbering.xml';
  if (parts.exists(numberingPart) && out.includes('<w:p')) {
    const stylesPart = rels.get(partOf('styles') ?? '') ?? 'word/styles.xml';
    const numbering = readNumbering(await parts.read(numberingPart, 'utf-8'), parts.exists(stylesPart) ? await parts.read(stylesPart, 'utf-8') : undefined);
    if (numbering.nums.size > 0) {
      // mammoth reads an alternate's fallback only: a numbered paragraph in a text box (written in
      // the choice and again in the fallback) is counted once, in the fallback.
      const choices: string[] = [];
      const masked = out.replace(/<mc:Choice\b[\s\S]*?<\/mc:Choice>(?=\s*<mc:Fallback)/g, (c) => `\u0000${choices.push(c) - 1}\u0000`);
      out = labelParagraphs(masked, numbering).replace(/\u0000(\d+)\u0000/g, (_, i: string) => choices[Number(i)]!);
    }
  }

  // Headers first, footers last, each distinct text once (first-page, even and default headers
  // often repeat each other).
  const pieces = { header: [] as string[], footer: [] as string[] };
  const seen = new Set<string>();
  for (const m of out.matchAll(/<w:(header|footer)Reference\b([^>]*)\/?>/g)) {
    const target = rels.get(/\br:id="([^"]+)"/.exec(m[2]!)?.[1] ?? '');
    if (!target || seen.has(target) || !parts.exists(target)) continue;
    seen.add(target);
    const text = wordParagraphs(await parts.read(target, 'utf-8')).join('\n');
    if (text === '' || pieces[m[1] as 'header' | 'footer'].includes(text)) continue;
    pieces[m[1] as 'header' | 'footer'].push(text);
  }
  const paragraphs = (texts: string[]) => texts.flatMap((t) => t.split('\n')).map(paragraph).join('');
  if (pieces.header.length > 0) out = out.replace(/<w:body>/, (b) => `${b}${paragraphs(pieces.header)}`);
  if (pieces.footer.length > 0) out = out.replace(/<\/w:body>/, (b) => `${paragraphs(pieces.footer)}${b}`);
  return out;
}

/**
 * DrawingML text boxes (`wps:txbx`) in a form mammoth reads. mammoth reads only the fallback of an
 * `mc:AlternateContent`: one without a fallback is unwrapped to its choice; and it reads a drawing
 * for its picture only, so a drawing holding text boxes is followed by a VML `w:pict` text box with
 * the same content, which mammoth reads. Alternates that have a fallback are left as they are.
 */
function visibleTextBoxes(xml: string): string {
  if (!xml.includes('txbxContent')) return xml;
  const kept: string[] = [];
  let out = xml.replace(/<mc:AlternateContent\b[^>]*>([\s\S]*?)<\/mc:AlternateContent>/g, (whole, inner: string) => {
    if (inner.includes('<mc:Fallback')) { kept.push(whole); return `\u0000${kept.length - 1}\u0000`; }
    return /<mc:Choice\b[^>]*>([\s\S]*?)<\/mc:Choice>/.exec(inner)?.[1] ?? '';
  });
  out = out.replace(/<w:drawing>[\s\S]*?<\/w:drawing>/g, (drawing) => {
    const boxes = [...drawing.matchAll(/<w:txbxContent\b[^>]*>([\s\S]*?)<\/w:txbxContent>/g)].map((m) => m[1]!);
    return boxes.length === 0 ? drawing : `${drawing}${boxes.map((b) => `<w:pict><v:shape xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox><w:txbxContent>${b}</w:txbxContent></v:textbox></v:shape></w:pict>`).join('')}`;
  });
  return out.replace(/\u0000(\d+)\u0000/g, (_, i: string) => kept[Number(i)]!);
}

/**
 * The paragraphs of a WordprocessingML part (a header, a footer) as lines of plain text: a table
 * row's cells joined by ` | `, tabs as spaces, a text box's paragraphs after the paragraph that
 * holds it, and of an `mc:AlternateContent` only the choice (its fallback repeats it).
 */
export function wordParagraphs(xml: string): string[] {
  const body = xml
    .replace(/<mc:Fallback\b[\s\S]*?<\/mc:Fallback>/g, '')
    .replace(/<w:(delText|instrText)\b[^>]*>[\s\S]*?<\/w:\1>/g, '');
  const lines: string[] = [];
  // Open paragraphs (with the lines of text boxes inside them) and table rows, innermost last.
  type Open = { kind: 'p'; text: string; after: string[] } | { kind: 'tr'; cells: string[] };
  const open: Open[] = [];
  let paragraph: (Open & { kind: 'p' }) | undefined;
  let inText = false;
  const emit = (line: string) => {
    if (line === '') return;
    const top = open[open.length - 1];
    if (!top) lines.push(line);
    else if (top.kind === 'p') top.after.push(line);
    else if (top.cells.length > 0) top.cells[top.cells.length - 1] = `${top.cells[top.cells.length - 1]} ${line}`.trim();
  };
  const innermost = () => [...open].reverse().find((o): o is Open & { kind: 'p' } => o.kind === 'p');
  for (const m of body.matchAll(/<(\/?)w:(p|tr|tc|t|tab|br|cr|noBreakHyphen)\b[^>]*?(\/?)>|([^<]+)/g)) {
    const [, close, tag, selfClosing, text] = m;
    if (text !== undefined) {
      if (inText && paragraph) paragraph.text += unescapeXml(text);
      continue;
    }
    if (tag === 't') { if (!selfClosing) inText = !close; continue; }
    if (tag === 'p') {
      if (selfClosing) continue;
      if (!close) { paragraph = { kind: 'p', text: '', after: [] }; open.push(paragraph); continue; }
      if (open[open.length - 1]?.kind !== 'p') continue;
      const p = open.pop() as Open & { kind: 'p' };
      paragraph = innermost();
      for (const line of [p.text.replace(/\s+/g, ' ').trim(), ...p.after]) emit(line);
    } else if (tag === 'tr') {
      if (!close) { open.push({ kind: 'tr', cells: [] }); continue; }
      if (open[open.length - 1]?.kind !== 'tr') continue;
      const row = open.pop() as Open & { kind: 'tr' };
      paragraph = innermost();
      const cells = row.cells.map((c) => c.trim());
      if (cells.some((c) => c !== '')) emit(cells.join(' | '));
    } else if (tag === 'tc') {
      const top = open[open.length - 1];
      if (!close && top?.kind === 'tr') top.cells.push('');
    } else if (paragraph) {
      paragraph.text += tag === 'noBreakHyphen' ? '-' : ' ';
    }
  }
  return lines;
}

/**
 * Text of a chart part (titles, series names, category labels; values are left out) or of a
 * diagram's data part (every `a:t`), escaped for XML, items separated by `; `.
 */
export function graphicText(xml: string): string {
  const items: string[] = [];
  const add = (s: string) => { const t = s.trim(); if (t !== '' && !items.includes(t)) items.push(t); };
  if (/<c:chartSpace\b/.test(xml)) {
    for (const m of xml.matchAll(/<c:title>([\s\S]*?)<\/c:title>/g)) add([...m[1]!.matchAll(/<a:t>([^<]*)<\/a:t>/g)].map((t) => t[1]).join(''));
    for (const m of xml.matchAll(/<c:(tx|cat)>([\s\S]*?)<\/c:\1>/g)) for (const v of m[2]!.matchAll(/<c:v>([^<]*)<\/c:v>/g)) add(v[1]!);
  } else {
    for (const m of xml.matchAll(/<a:t>([^<]*)<\/a:t>/g)) add(m[1]!);
  }
  return items.join('; ');
}

/** Paragraphs of an altChunk part, or undefined for a kind not read (DOCX, RTF). */
export function altChunkText(raw: string, name: string): string[] | undefined {
  let html: string | undefined;
  if (/\.(mht|mhtml)$/i.test(name) || /^MIME-Version:/im.test(raw.slice(0, 2000))) html = mhtHtml(raw);
  else if (/\.html?$/i.test(name) || /^\s*<(!doctype|html|body|p|div)\b/i.test(raw)) html = raw;
  else if (/\.txt$/i.test(name)) return raw.split(/\r?\n\s*\r?\n/).map((p) => p.trim()).filter(Boolean);
  if (html === undefined) return undefined;
  return htmlParagraphs(html);
}

function htmlParagraphs(html: string): string[] {
  const body = /<body\b[^>]*>([\s\S]*?)(<\/body>|$)/i.exec(html)?.[1] ?? html;
  const text = body
    .replace(/<(script|style|head)\b[\s\S]*?<\/\1>/gi, '')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|div|h[1-6]|li|tr|table|blockquote|pre)>/gi, '\n\n')
    .replace(/<\/t[dh]>/gi, ' ')
    .replace(/<[^>]*>/g, '');
  return unescapeHtml(text).split(/\n\s*\n/).map((p) => p.replace(/[ \t\r\n]+/g, ' ').trim()).filter(Boolean);
}

const named: Record<string, string> = { nbsp: '\u00a0', copy: '©', reg: '®', hellip: '…', mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', ldquo: '“', rdquo: '”', euro: '€' };
function unescapeHtml(s: string): string {
  return unescapeXml(s.replace(/&([a-z]+);/gi, (m, n: string) => named[n.toLowerCase()] ?? m)).replace(/\u00a0/g, ' ');
}

/** The HTML part of a MIME (MHT) document, decoded (quoted-printable or base64). */
function mhtHtml(raw: string): string | undefined {
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(raw)?.[1];
  const sections = boundary ? raw.split(`--${boundary}`) : [raw];
  for (const section of sections) {
    const split = section.search(/\r?\n\r?\n/);
    if (split < 0) continue;
    const headers = section.slice(0, split);
    if (!/content-type:\s*text\/html/i.test(headers)) continue;
    const body = section.slice(split).trim();
    const charset = /charset="?([\w-]+)"?/i.exec(headers)?.[1] ?? 'utf-8';
    const encoding = /content-transfer-encoding:\s*([\w-]+)/i.exec(headers)?.[1]?.toLowerCase();
    let bytes: Buffer;
    if (encoding === 'base64') bytes = Buffer.from(body, 'base64');
    else if (encoding === 'quoted-printable') bytes = Buffer.from(body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');
    else return body;
    try {
      return new TextDecoder(charset).decode(bytes);
    } catch {
      return bytes.toString('utf8');
    }
  }
  return undefined;
}

async function replaceAsync(s: string, re: RegExp, fn: (...m: string[]) => Promise<string>): Promise<string> {
  const matches = [...s.matchAll(re)];
  if (matches.length === 0) return s;
  let out = '';
  let last = 0;
  for (const m of matches) {
    out += s.slice(last, m.index) + (await fn(...(m as unknown as string[])));
    last = m.index! + m[0].length;
  }
  return out + s.slice(last);
}

/** Relationship id → part name, from a part's .rels (targets relative to `base`'s folder). */
export function relationships(relsXml: string | undefined, base = 'word'): Map<string, string> {
  const map = new Map<string, string>();
  if (!relsXml) return map;
  for (const m of relsXml.matchAll(/<Relationship\b([^>]*)\/?>/g)) {
    const attrs = m[1]!;
    const id = /\bId="([^"]+)"/.exec(attrs)?.[1];
    const target = /\bTarget="([^"]+)"/.exec(attrs)?.[1];
    if (!id || !target || /\bTargetMode="External"/.test(attrs)) continue;
    map.set(id, normalise(target.startsWith('/') ? target.slice(1) : `${base}/${target}`));
  }
  return map;
}

/** Relationship id → its type (the last segment of the type URI, e.g. `numbering`). */
export function relationshipTypes(relsXml: string | undefined): Map<string, string> {
  const map = new Map<string, string>();
  for (const m of (relsXml ?? '').matchAll(/<Relationship\b([^>]*)\/?>/g)) {
    const id = /\bId="([^"]+)"/.exec(m[1]!)?.[1];
    const type = /\bType="([^"]+)"/.exec(m[1]!)?.[1];
    if (id && type) map.set(id, type.slice(type.lastIndexOf('/') + 1));
  }
  return map;
}

function normalise(path: string): string {
  const out: string[] = [];
  for (const piece of unescapeXml(path).split('/')) {
    if (piece === '..') out.pop();
    else if (piece !== '.' && piece !== '') out.push(piece);
  }
  return out.join('/');
}
