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
 */
import { unescapeXml } from './ooxml';

export interface PartReader {
  exists(name: string): boolean;
  read(name: string, encoding: 'utf-8'): Promise<string>;
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const run = (escaped: string) => `<w:r><w:t xml:space="preserve">${escaped}</w:t></w:r>`;
const paragraph = (text: string) => `<w:p>${run(xmlEscape(text))}</w:p>`;

/** Whether the main part needs rewriting at all (most documents do not). */
export function needsRewrite(xml: string): boolean {
  return xml.includes('<w:ruby') || xml.includes('<w:altChunk') || xml.includes(':chart ') || xml.includes(':relIds ');
}

/** Texts (`<w:t>`) inside a piece of WordprocessingML, still escaped. */
const wordTexts = (xml: string) => [...xml.matchAll(/<w:t(?:\s[^>]*)?>([^<]*)<\/w:t>/g)].map((m) => m[1]!).join('');

export async function rewriteMainPart(xml: string, rels: Map<string, string>, parts: PartReader, warnings: string[]): Promise<string> {
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
    const raw = await parts.read(target, 'utf-8');
    const paragraphs = altChunkText(raw, target);
    if (paragraphs === undefined) {
      warnings.push(`an embedded part (${target}) was not read: only HTML, MHT and plain-text chunks are`);
      return '';
    }
    return paragraphs.map(paragraph).join('');
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
  return out;
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

function normalise(path: string): string {
  const out: string[] = [];
  for (const piece of unescapeXml(path).split('/')) {
    if (piece === '..') out.pop();
    else if (piece !== '.' && piece !== '') out.push(piece);
  }
  return out.join('/');
}
