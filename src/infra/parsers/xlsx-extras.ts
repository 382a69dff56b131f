/**
 * What exceljs' streaming reader skips in a worksheet part, picked out of the bytes the ZIP guard
 * inflates anyway (zip.ts EntryObserver), so no sheet is inflated twice:
 *  - merged ranges (`mergeCell`) and the header/footer (`headerFooter`), both after `sheetData`:
 *    everything after it is kept (bounded) and read once the part is through;
 *  - whether the part has cells of type `d` (ISO 8601 dates, as Strict Open XML workbooks store
 *    them): exceljs reads `2024-01-15T00:00:00` as the number 2024. Only such a sheet is read again,
 *    for those cells' values.
 */
import { unescapeXml } from './ooxml';
import type { ZipArchive, ZipEntry } from './zip';

export interface SheetExtras {
  /** Merged ranges, 1-based, in sheet order. */
  merges: { ref: string; top: number; left: number; bottom: number; right: number }[];
  headers: string[];
  footers: string[];
  /** Cells of type d: `A1` → the ISO 8601 text as stored. */
  dates?: Map<string, string>;
}

const maxTail = 16 * 1024 * 1024;
const endMarkers = [Buffer.from('</sheetData>'), Buffer.from('<sheetData/>')];
const dateMarker = Buffer.from('t="d"');
const overlap = 16;

interface Scan { tail: Buffer[]; tailBytes: number; inTail: boolean; hasDates: boolean; carry: Buffer }

/** Collects, per worksheet part, what SheetExtras needs while the guard inflates it. */
export class SheetScanner {
  private readonly scans = new Map<string, Scan>();

  readonly observe = (entry: ZipEntry): ((piece: Buffer) => void) | undefined => {
    if (!/^xl\/worksheets\/[^/]+\.xml$/.test(entry.name)) return undefined;
    const scan: Scan = { tail: [], tailBytes: 0, inTail: false, hasDates: false, carry: Buffer.alloc(0) };
    this.scans.set(entry.name, scan);
    return (piece) => this.take(scan, piece);
  };

  private take(scan: Scan, piece: Buffer): void {
    if (scan.inTail) { this.keep(scan, piece); return; }
    // A marker can straddle two pieces: the end of the last one is searched with the start of this one.
    const seam = Buffer.concat([scan.carry, piece.subarray(0, overlap)]);
    if (!scan.hasDates && (piece.includes(dateMarker) || seam.includes(dateMarker))) scan.hasDates = true;
    for (const marker of endMarkers) {
      let at = piece.indexOf(marker);
      if (at >= 0) at += marker.length;
      else {
        const s = seam.indexOf(marker);
        if (s >= 0) at = s + marker.length - scan.carry.length;
      }
      if (at >= 0) {
        scan.inTail = true;
        this.keep(scan, piece.subarray(at));
        return;
      }
    }
    scan.carry = Buffer.from(piece.subarray(Math.max(0, piece.length - overlap)));
  }

  private keep(scan: Scan, piece: Buffer): void {
    if (scan.tailBytes >= maxTail || piece.length === 0) return;
    const part = piece.subarray(0, maxTail - scan.tailBytes);
    scan.tail.push(Buffer.from(part));
    scan.tailBytes += part.length;
  }

  /** The extras of a worksheet part (after the guard has inflated it). */
  async extras(zip: ZipArchive, part: string, maxBytes: number, maxDates: number): Promise<SheetExtras | undefined> {
    const scan = this.scans.get(part);
    if (!scan) return undefined;
    const tail = Buffer.concat(scan.tail).toString('utf8');
    const extras: SheetExtras = { merges: mergedRanges(tail), ...headerFooter(tail) };
    if (scan.hasDates) extras.dates = dateCells((await zip.readText(part, maxBytes)) ?? '', maxDates);
    return extras;
  }
}

/** `B3` → { row: 3, col: 2 }. */
export function cellAddress(ref: string): { row: number; col: number } | undefined {
  const m = /^\$?([A-Z]{1,3})\$?(\d+)$/.exec(ref.toUpperCase());
  if (!m) return undefined;
  let col = 0;
  for (const ch of m[1]!) col = col * 26 + (ch.charCodeAt(0) - 64);
  return { row: Number(m[2]), col };
}

export function columnName(col: number): string {
  let s = '';
  for (let n = col; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  return s;
}

function mergedRanges(tail: string): SheetExtras['merges'] {
  const out: SheetExtras['merges'] = [];
  for (const m of tail.matchAll(/<(?:\w+:)?mergeCell\b[^>]*?\bref="([^"]+)"/g)) {
    const [a, b = a] = m[1]!.split(':');
    const from = cellAddress(a!);
    const to = cellAddress(b!);
    if (!from || !to) continue;
    out.push({ ref: m[1]!, top: Math.min(from.row, to.row), left: Math.min(from.col, to.col), bottom: Math.max(from.row, to.row), right: Math.max(from.col, to.col) });
  }
  return out;
}

function headerFooter(tail: string): { headers: string[]; footers: string[] } {
  const block = /<(?:\w+:)?headerFooter\b[^>]*>([\s\S]*?)<\/(?:\w+:)?headerFooter>/.exec(tail)?.[1] ?? '';
  const headers: string[] = [];
  const footers: string[] = [];
  // Default (odd) pages first, then first-page and even-page ones that differ.
  for (const kind of ['odd', 'first', 'even']) {
    for (const [which, list] of [['Header', headers], ['Footer', footers]] as const) {
      const raw = new RegExp(`<(?:\\w+:)?${kind}${which}>([\\s\\S]*?)</(?:\\w+:)?${kind}${which}>`).exec(block)?.[1];
      const text = raw === undefined ? '' : headerFooterText(unescapeXml(raw));
      if (text !== '' && !list.includes(text)) list.push(text);
    }
  }
  return { headers, footers };
}

const fields: Record<string, string> = { P: '&[Page]', N: '&[Pages]', D: '&[Date]', T: '&[Time]', F: '&[File]', A: '&[Tab]', Z: '&[Path]', G: '&[Picture]' };

/**
 * A header/footer as Excel's page-setup dialog shows it: the left, center and right sections
 * (`&L`, `&C`, `&R`; text before any of them is the center) joined by ` | `, fields named as Excel
 * names them (`&[Page]`, `&[Pages]`, `&[Date]`, `&[Tab]`…), formatting codes (font, size, colour,
 * bold…) left out, `&&` as `&`.
 */
export function headerFooterText(code: string): string {
  const sections: Record<'L' | 'C' | 'R', string> = { L: '', C: '', R: '' };
  let current: 'L' | 'C' | 'R' = 'C';
  let i = 0;
  while (i < code.length) {
    const ch = code[i]!;
    if (ch !== '&') { sections[current] += ch; i++; continue; }
    const next = code[i + 1] ?? '';
    if (next === '&') { sections[current] += '&'; i += 2; continue; }
    if (next === 'L' || next === 'C' || next === 'R') { current = next; i += 2; continue; }
    if (next === '"') { const end = code.indexOf('"', i + 2); i = end < 0 ? code.length : end + 1; continue; }
    if (/\d/.test(next)) { i += 1; while (i < code.length && /\d/.test(code[i]!)) i++; continue; }
    if (next === 'K') { const m = /^&K([0-9A-Fa-f]{6}|[0-9]{2}[+-][0-9]{3})/.exec(code.slice(i)); i += m ? m[0].length : 2; continue; }
    if (fields[next]) {
      sections[current] += fields[next];
      i += 2;
      // &P+1 / &P-1: a page number offset.
      const offset = /^[+-]\d+/.exec(code.slice(i));
      if (offset && (next === 'P' || next === 'N')) { sections[current] += offset[0]; i += offset[0].length; }
      continue;
    }
    i += 2; // &B, &I, &U, &E, &S, &X, &Y, &O, &H: formatting
  }
  return (['L', 'C', 'R'] as const).map((k) => sections[k].replace(/\s+/g, ' ').trim()).filter((s) => s !== '').join(' | ');
}

/** Cells of type d (`<c r="C2" t="d"><v>2024-01-15T00:00:00</v></c>`): ref → ISO text. */
function dateCells(xml: string, max: number): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of xml.matchAll(/<(?:\w+:)?c\b([^>]*\bt="d"[^>]*)>\s*<(?:\w+:)?v>([^<]*)<\/(?:\w+:)?v>/g)) {
    const ref = /\br="([^"]+)"/.exec(m[1]!)?.[1];
    if (!ref) continue;
    out.set(ref.toUpperCase(), m[2]!.trim());
    if (out.size >= max) break;
  }
  return out;
}
