/**
 * DOM to readable plain text: block elements become line breaks (paragraph-level ones a blank
 * line), inline whitespace collapses as a browser would, <pre> keeps its layout, table cells are
 * tab-separated, and invisible or non-content elements (scripts, styles, forms' controls, hidden
 * nodes) are skipped. Formulas (MathML) are written out as linear text (`x = (−b)/(2a)`, `x^2`);
 * figure captions and image alt text are left out (a reader of the page sees neither as its text),
 * except the alt text of a formula drawn as an image (`{\displaystyle ...}`). Works on any DOM with
 * nodeType/tagName/childNodes (linkedom here).
 */
import type { DomNode } from './dom-node';
import { mathText } from './math-text';

export type { DomNode } from './dom-node';

const SKIP = new Set([
  'SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS', 'IFRAME', 'OBJECT', 'EMBED', 'HEAD', 'TITLE',
  'META', 'LINK', 'BUTTON', 'SELECT', 'OPTION', 'TEXTAREA', 'INPUT', 'DIALOG', 'AUDIO', 'VIDEO', 'MAP', 'FIGCAPTION',
]);
const PARAGRAPH = new Set([
  'P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'BLOCKQUOTE', 'PRE', 'FIGURE', 'TABLE', 'UL', 'OL', 'DL', 'SECTION',
  'ARTICLE', 'HEADER', 'FOOTER', 'ASIDE', 'NAV', 'MAIN', 'HR', 'ADDRESS', 'DETAILS', 'FIELDSET', 'FORM',
]);
const LINE = new Set(['DIV', 'LI', 'TR', 'DT', 'DD', 'BR', 'FIGCAPTION', 'SUMMARY', 'CAPTION', 'LEGEND', 'LABEL', 'THEAD', 'TBODY', 'TFOOT']);
const CELL = new Set(['TD', 'TH']);

const CELL_MARK = '\u0000';

type Token = { text: string; pre: boolean } | { brk: 1 | 2 } | { cell: true };

function hidden(el: DomNode): boolean {
  const get = el.getAttribute?.bind(el);
  if (!get) return false;
  if (get('hidden') !== null || get('aria-hidden') === 'true') return true;
  const style = get('style');
  return !!style && /(display\s*:\s*none|visibility\s*:\s*hidden)/i.test(style);
}

function walk(node: DomNode, out: Token[], pre: boolean): void {
  if (node.nodeType === 3) {
    // A NUL in the page's text is dropped, as an HTML parser drops it (and here it is the cell mark).
    const t = (node.textContent ?? '').replaceAll(CELL_MARK, '');
    out.push({ text: pre ? t.replace(/\r\n?/g, '\n') : t, pre });
    return;
  }
  if (node.nodeType !== 1 && node.nodeType !== 9 && node.nodeType !== 11) return;
  const name = node.nodeName.toUpperCase();
  if (SKIP.has(name) || (node.nodeType === 1 && hidden(node))) return;
  if (name === 'BR') {
    out.push({ brk: 1 });
    return;
  }
  const weight = PARAGRAPH.has(name) ? 2 : LINE.has(name) ? 1 : 0;
  if (weight) out.push({ brk: weight as 1 | 2 });
  if (name === 'MATH') {
    const block = node.getAttribute?.('display') === 'block';
    const t = mathText(node);
    if (block) out.push({ brk: 1 });
    if (t) out.push({ text: ` ${t} `, pre: false });
    if (block) out.push({ brk: 1 });
    return;
  }
  if (name === 'IMG') {
    const formula = mathImageText(node);
    if (formula) out.push({ text: ` ${formula} `, pre: false });
    return;
  }
  const kids = node.childNodes;
  const inPre = pre || name === 'PRE';
  for (let i = 0; i < kids.length; i++) walk(kids[i], out, inPre);
  if (CELL.has(name)) out.push({ cell: true });
  if (weight) out.push({ brk: weight as 1 | 2 });
}

/**
 * The formula of an image that draws one (Wikipedia's fallback images: class `mwe-math-fallback-image`,
 * alt `{\displaystyle x^{2}}`; other sites' `class="math"` or `class="latex"` images), else ''.
 */
function mathImageText(img: DomNode): string {
  const alt = img.getAttribute?.('alt')?.trim() ?? '';
  if (!alt) return '';
  const cls = img.getAttribute?.('class') ?? '';
  if (!/(^|[\s_-])(math|latex|tex|formula|equation)/i.test(cls) && !/^\{?\\(displaystyle|textstyle)\b/.test(alt)) return '';
  return alt.replace(/^\{\s*\\(?:displaystyle|textstyle)\s*(.*)\}$/s, '$1').trim();
}

/** A line that is only an image's file name (`IMG_2041.jpg`, `chart-final(2).png`) is no text of the page. */
const FILE_NAME = /^[\p{L}\p{N}_\-.()~ ]{1,80}\.(?:jpe?g|png|gif|webp|avif|svg|bmp|tiff?|heic)$/iu;

/** One block's tokens as a line (or, for <pre>, lines kept as they are). */
function flush(parts: string[], pre: boolean): string {
  const joined = parts.join('');
  if (pre) return joined.replace(/^\n+|\s+$/g, '').replace(/[ \t]+\n/g, '\n').replaceAll(CELL_MARK, '\t');
  return joined.replace(/\s+/g, ' ').trim().replace(/ ?\u0000 ?/g, '\t').replace(/\t+$/, '');
}

/**
 * Plain text of a node and its descendants. Linear in the size of the tree: text is gathered per
 * block and normalised once per block (regexes over the growing whole would be quadratic).
 */
export function domToText(root: DomNode): string {
  const tokens: Token[] = [];
  walk(root, tokens, false);
  const blocks: string[] = [];
  let parts: string[] = [];
  let pre = false;
  let pending: 0 | 1 | 2 = 0;
  const end = () => {
    let line = flush(parts, pre);
    if (!pre && FILE_NAME.test(line)) line = '';
    parts = [];
    pre = false;
    if (line === '') return;
    if (blocks.length > 0) blocks.push(pending === 2 ? '\n\n' : '\n');
    blocks.push(line);
    pending = 0;
  };
  for (const t of tokens) {
    if ('text' in t) {
      parts.push(t.text);
      pre ||= t.pre;
    } else if ('brk' in t) {
      end();
      pending = Math.max(pending, t.brk) as 0 | 1 | 2;
    } else {
      parts.push(CELL_MARK);
    }
  }
  end();
  return blocks.join('');
}
