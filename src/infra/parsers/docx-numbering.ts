/**
 * List numbers as Word displays them. mammoth turns a numbered paragraph into an `<li>` of an
 * `<ol>`, so the number a reader sees (`3)`, `b)`, `ii.`, `1.2.1`, a list that starts at 5) was
 * lost. The labels are computed here from numbering.xml (and paragraph styles that carry numbering)
 * in document order, and put at the start of each numbered paragraph between two noncharacters
 * (`labelStart` … `labelEnd`) that docx.ts turns back into the label.
 *
 * Counting follows Word: one set of counters per abstract numbering definition (lists whose `w:num`
 * share one continue each other), a `w:startOverride` restarts its level the first time its `w:num`
 * is used, and a level restarts after any paragraph of a higher level (unless `w:lvlRestart` says
 * otherwise). Bullets keep mammoth's `-`.
 */
import { unescapeXml } from './ooxml';

export const labelStart = '\ufdd0';
export const labelEnd = '\ufdd1';

interface Level { start: number; format: string; text: string; restart?: number; legal: boolean }
interface Num { abstract: string; overrides: Map<number, number>; levels: Map<number, Level> }

export interface Numbering {
  abstracts: Map<string, Map<number, Level>>;
  nums: Map<string, Num>;
  /** Paragraph style id → its numbering (numId, level). */
  styles: Map<string, { numId?: string; level?: number; basedOn?: string }>;
}

const attr = (xml: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(xml)?.[1];
const valOf = (xml: string, tag: string) => {
  const m = new RegExp(`<${tag}\\b([^>]*)/?>`).exec(xml);
  return m ? attr(m[1]!, 'w:val') : undefined;
};

function levels(xml: string): Map<number, Level> {
  const out = new Map<number, Level>();
  for (const m of xml.matchAll(/<w:lvl\b([^>]*)>([\s\S]*?)<\/w:lvl>/g)) {
    const ilvl = Number(attr(m[1]!, 'w:ilvl') ?? 0);
    const body = m[2]!;
    const restart = valOf(body, 'w:lvlRestart');
    out.set(ilvl, {
      start: Number(valOf(body, 'w:start') ?? 0),
      format: valOf(body, 'w:numFmt') ?? 'decimal',
      text: unescapeXml(valOf(body, 'w:lvlText') ?? ''),
      ...(restart !== undefined ? { restart: Number(restart) } : {}),
      legal: /<w:isLgl\b(?![^>]*w:val="(0|false)")/.test(body),
    });
  }
  return out;
}

export function readNumbering(numberingXml: string | undefined, stylesXml: string | undefined): Numbering {
  const abstracts = new Map<string, Map<number, Level>>();
  const nums = new Map<string, Num>();
  for (const m of (numberingXml ?? '').matchAll(/<w:abstractNum\b([^>]*)>([\s\S]*?)<\/w:abstractNum>/g)) {
    abstracts.set(attr(m[1]!, 'w:abstractNumId') ?? '', levels(m[2]!));
  }
  for (const m of (numberingXml ?? '').matchAll(/<w:num\b([^>]*)>([\s\S]*?)<\/w:num>/g)) {
    const body = m[2]!;
    const overrides = new Map<number, number>();
    const overrideLevels = new Map<number, Level>();
    for (const o of body.matchAll(/<w:lvlOverride\b([^>]*)>([\s\S]*?)<\/w:lvlOverride>/g)) {
      const ilvl = Number(attr(o[1]!, 'w:ilvl') ?? 0);
      const start = valOf(o[2]!, 'w:startOverride');
      if (start !== undefined) overrides.set(ilvl, Number(start));
      for (const [k, v] of levels(o[2]!)) overrideLevels.set(k, v);
    }
    nums.set(attr(m[1]!, 'w:numId') ?? '', { abstract: valOf(body, 'w:abstractNumId') ?? '', overrides, levels: overrideLevels });
  }
  const styles = new Map<string, { numId?: string; level?: number; basedOn?: string }>();
  for (const m of (stylesXml ?? '').matchAll(/<w:style\b([^>]*)>([\s\S]*?)<\/w:style>/g)) {
    if (attr(m[1]!, 'w:type') !== 'paragraph') continue;
    const id = attr(m[1]!, 'w:styleId');
    if (!id) continue;
    const body = m[2]!;
    const numPr = /<w:numPr>([\s\S]*?)<\/w:numPr>/.exec(body)?.[1];
    const numId = numPr ? valOf(numPr, 'w:numId') : undefined;
    const ilvl = numPr ? valOf(numPr, 'w:ilvl') : undefined;
    styles.set(id, { ...(numId !== undefined ? { numId } : {}), ...(ilvl !== undefined ? { level: Number(ilvl) } : {}), ...(valOf(body, 'w:basedOn') ? { basedOn: valOf(body, 'w:basedOn') } : {}) });
  }
  return { abstracts, nums, styles };
}

/** Whether the document numbers anything with a number (not only bullets). */
export function hasNumbers(n: Numbering): boolean {
  const numbered = (ls: Map<number, Level>) => [...ls.values()].some((l) => l.format !== 'bullet' && l.format !== 'none');
  return [...n.abstracts.values()].some(numbered) || [...n.nums.values()].some((num) => numbered(num.levels));
}

/**
 * The main part with the displayed label put at the start of each numbered paragraph (after its
 * properties). Paragraphs are visited in document order, text boxes and table cells included.
 */
export function labelParagraphs(xml: string, numbering: Numbering): string {
  const counters = new Map<string, (number | undefined)[]>();
  const usedNums = new Set<string>();
  return xml.replace(/(<w:p(?:\s[^>]*)?>)(\s*<w:pPr>([\s\S]*?)<\/w:pPr>)?/g, (whole, open: string, pPrWhole: string | undefined, pPr: string | undefined) => {
    const ref = numberingOf(pPr ?? '', numbering);
    if (!ref) return whole;
    const num = numbering.nums.get(ref.numId);
    const abstract = num ? numbering.abstracts.get(num.abstract) : undefined;
    if (!num || !abstract) return whole;
    const levelOf = (k: number) => num.levels.get(k) ?? abstract.get(k);
    const level = levelOf(ref.level);
    if (!level) return whole;
    const startOf = (k: number) => num.overrides.get(k) ?? levelOf(k)?.start ?? 0;
    const state = counters.get(num.abstract) ?? [];
    counters.set(num.abstract, state);
    if (!usedNums.has(ref.numId)) {
      usedNums.add(ref.numId);
      // A restarted list (Word's "Restart numbering": a w:num with a startOverride) starts again.
      for (const k of num.overrides.keys()) state[k] = undefined;
    }
    state[ref.level] = state[ref.level] === undefined ? startOf(ref.level) : state[ref.level]! + 1;
    for (let k = ref.level + 1; k < 9; k++) {
      const deeper = levelOf(k);
      // lvlRestart n: restart after a paragraph of level n-1 or higher; 0: never restart.
      if (deeper?.restart === 0) continue;
      if (deeper?.restart !== undefined && ref.level > deeper.restart - 1) continue;
      state[k] = undefined;
    }
    if (level.format === 'bullet') return whole;
    const label = level.format === 'none' ? '' : level.text.replace(/%([1-9])/g, (_, d: string) => {
      const k = Number(d) - 1;
      return formatNumber(state[k] ?? startOf(k), level.legal && k < ref.level ? 'decimal' : levelOf(k)?.format ?? 'decimal');
    });
    const run = `<w:r><w:t xml:space="preserve">${labelStart}${escapeXml(label)}${labelEnd}</w:t></w:r>`;
    return `${open}${pPrWhole ?? ''}${run}`;
  });
}

/** The numbering a paragraph has: its own numPr, else its style's (following basedOn). */
function numberingOf(pPr: string, numbering: Numbering): { numId: string; level: number } | undefined {
  const numPr = /<w:numPr>([\s\S]*?)<\/w:numPr>/.exec(pPr.replace(/<w:pPrChange\b[\s\S]*?<\/w:pPrChange>/g, ''))?.[1];
  let numId = numPr ? valOf(numPr, 'w:numId') : undefined;
  let level = numPr ? valOf(numPr, 'w:ilvl') : undefined;
  let style = valOf(pPr, 'w:pStyle');
  for (let depth = 0; style && depth < 10 && (numId === undefined || level === undefined); depth++) {
    const s = numbering.styles.get(style);
    if (!s) break;
    numId ??= s.numId;
    if (level === undefined && s.level !== undefined) level = String(s.level);
    style = s.basedOn;
  }
  if (numId === undefined || numId === '0') return undefined;
  return { numId, level: Math.min(8, Math.max(0, Number(level ?? 0) || 0)) };
}

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A list number in one of Word's formats (decimal for those not written here). */
export function formatNumber(n: number, format: string): string {
  switch (format) {
    case 'decimalZero': return n < 10 && n >= 0 ? `0${n}` : String(n);
    case 'lowerRoman': return roman(n).toLowerCase();
    case 'upperRoman': return roman(n);
    case 'lowerLetter': return letters(n).toLowerCase();
    case 'upperLetter': return letters(n);
    case 'ordinal': return `${n}${ordinalSuffix(n)}`;
    case 'decimalEnclosedCircle': return n >= 1 && n <= 20 ? String.fromCodePoint(0x2460 + n - 1) : String(n);
    case 'decimalEnclosedParen': return `(${n})`;
    default: return String(n);
  }
}

function roman(n: number): string {
  if (n <= 0 || n >= 4000) return String(n);
  const table: [number, string][] = [[1000, 'M'], [900, 'CM'], [500, 'D'], [400, 'CD'], [100, 'C'], [90, 'XC'], [50, 'L'], [40, 'XL'], [10, 'X'], [9, 'IX'], [5, 'V'], [4, 'IV'], [1, 'I']];
  let out = '';
  for (const [v, s] of table) while (n >= v) { out += s; n -= v; }
  return out;
}

/** Word's letters: A…Z, then AA…ZZ, AAA… (the letter repeated, not base 26). */
function letters(n: number): string {
  if (n <= 0) return String(n);
  const letter = String.fromCharCode(65 + ((n - 1) % 26));
  return letter.repeat(Math.floor((n - 1) / 26) + 1);
}

function ordinalSuffix(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return 'th';
  return ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th';
}
