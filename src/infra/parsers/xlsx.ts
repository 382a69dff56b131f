/**
 * XLSX with exceljs' streaming WorkbookReader: rows arrive one at a time, so a large sheet costs
 * time, not memory (shared strings are cached, bounded by the ZIP guard's inflate limit). Cells are
 * turned into the text a reader would see: formula results, rich text joined, numbers and dates
 * rendered with the cell's number format (numfmt, an Excel number-format library: `1,599.99`,
 * `2.50%`, `2 1/2`, `17-May-07`, `00123`); with no format (General) numbers to 15 significant
 * digits like Excel, and dates in the locale's short-date format as ISO 8601. A number shown
 * differently from its value keeps the value in the table's `values`. Every row is read so counts are exact and a workbook
 * over maxSourceRows (row elements, empty or not) fails; rows beyond the budget are counted, not kept.
 */
import { createRequire } from 'node:module';
import type { Block, Extracted, SheetInfo, TableBlock } from './assemble';
import type { Budget } from './budget';
import { corrupt, describeError, ParseFailure, tooLarge } from './errors';
import { graphicText } from './docx-parts';
import { openOoxml, readCoreProperties, unescapeXml } from './ooxml';
import { columnName, SheetScanner, type SheetExtras } from './xlsx-extras';

// exceljs is CommonJS; requiring it keeps the import cheap inside the worker.
const require = createRequire(import.meta.url);
type ExcelJs = typeof import('exceljs');
let excel: ExcelJs | undefined;
const load = (): ExcelJs => (excel ??= require('exceljs') as ExcelJs);

interface SheetModel { id: number; name: string; state?: string }
interface StreamCell { value: unknown; numFmt?: string }
interface StreamRow { number: number; eachCell(cb: (cell: StreamCell, col: number) => void): void }
type NumFmt = typeof import('numfmt');
// numfmt ships ESM only (its CommonJS entry is missing from the package): loaded once, on first use.
let numfmt: Promise<NumFmt> | undefined;
const loadNumfmt = () => (numfmt ??= import('numfmt'));

/** Loads the libraries an XLSX parse uses (a runner warming up before its first job). */
export async function preloadXlsx(): Promise<void> {
  load();
  await loadNumfmt();
}
interface StreamSheet extends AsyncIterable<StreamRow> { id: number | string; name?: string; state?: string }

export async function extractXlsx(path: string, budget: Budget): Promise<Extracted> {
  // Merged ranges, headers/footers and ISO date cells are picked out while the guard inflates the
  // sheets (xlsx-extras.ts); exceljs' streaming reader skips them.
  const scanner = new SheetScanner();
  const zip = await openOoxml(path, 'xlsx', budget.limits, { observe: scanner.observe });
  const meta = await readCoreProperties(zip);
  const { maxSourceRows, maxColumns } = budget.limits;
  const ExcelJS = load();
  // exceljs' reader walks the ZIP's local headers in file order and needs the workbook, its
  // relationships, styles and shared strings before any sheet: a sheet seen before workbook.xml
  // failed ("reading 'sheets'"), one seen before the shared strings was spooled to a temp file. ZIP
  // promises no order, so the reader gets the entries in the order it needs.
  const input = zip.streamInOrder(['xl/_rels/workbook.xml.rels', 'xl/workbook.xml', 'xl/styles.xml', 'xl/sharedStrings.xml']);
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(input, {
    worksheets: 'emit',
    sharedStrings: 'cache',
    styles: 'cache', // number formats: tells dates from numbers
    hyperlinks: 'ignore',
    entries: 'ignore',
  });
  const nf = await loadNumfmt();
  const display = (cell: StreamCell): string => shownText(cell, nf);
  const read: { sheet: StreamSheet; table: TableBlock; columns: number; extras?: SheetExtras }[] = [];
  let total = 0;
  let scanned = 0;
  try {
    for await (const sheet of reader as unknown as AsyncIterable<StreamSheet>) {
      const name = sheet.name ?? `Sheet${sheet.id}`;
      const table: TableBlock = { type: 'table', source: { kind: 'xlsx', sheet: name }, rows: [], row_numbers: [], row_count: 0, truncated: false, header: true, caption: `Sheet: ${name}` };
      const extras = await scanner.extras(zip, `xl/worksheets/sheet${sheet.id}.xml`, budget.limits.maxUnzippedBytes, budget.limits.maxCells);
      const dates = extras?.dates;
      const merges = new MergeFill(extras?.merges ?? []);
      if (extras && extras.merges.length > 0) table.merged_cells = extras.merges.slice(0, maxMergedListed).map((m) => m.ref);
      let columns = 0;
      for await (const row of sheet) {
        // Every row element counts toward the hard limit, empty ones too: millions of them cost
        // time even though none is kept.
        if (++scanned > maxSourceRows) throw tooLarge(`XLSX has more than ${maxSourceRows} rows (limit ${maxSourceRows})`);
        const full = budget.full;
        if (full !== undefined) {
          // The budget takes no more rows: the row is only counted (non-empty rows, columns), so
          // its cells are checked for content without being turned into text.
          let width = 0;
          let blank = true;
          row.eachCell((cell, col) => {
            if (col > maxColumns) { budget.truncate('columns'); return; }
            width = col;
            if (blank && !isBlankCell(cell.value)) blank = false;
          });
          if (blank) continue;
          total++;
          table.row_count++;
          if (width > columns) columns = width;
          budget.truncate(full);
          table.truncated = true;
          continue;
        }
        const cells: string[] = [];
        let values: CellValue[] | undefined;
        let blank = true;
        row.eachCell((cell, col) => {
          if (col > maxColumns) { budget.truncate('columns'); return; }
          // A date stored as ISO 8601 text (type d, Strict workbooks), which exceljs reads as a number.
          const iso = dates?.get(`${columnName(col)}${row.number}`);
          const text = display(iso === undefined ? cell : { value: isoDate(iso) ?? iso, numFmt: cell.numFmt });
          cells[col - 1] = text;
          if (shownValue !== undefined) (values ??= [])[col - 1] = shownValue;
          if (blank && !isBlank(text)) blank = false;
        });
        if (merges.active) {
          // Inside a merged range spanning rows, the value of its first cell shows on every row.
          values ??= [];
          merges.fill(row.number, cells, values, blank);
          if (values.length === 0) values = undefined;
        }
        if (blank) continue;
        for (let i = 0; i < cells.length; i++) cells[i] ??= '';
        total++;
        table.row_count++;
        if (cells.length > columns) columns = cells.length;
        const kept = budget.takeRow(cells);
        if (kept === undefined) table.truncated = true;
        else if (kept.length > 0) {
          if (values) {
            // Rows before this one had no value differing from its text: their entries are null.
            table.values ??= table.rows.map((r) => r.map(() => null));
            table.values.push(Array.from({ length: kept.length }, (_, i) => values![i] ?? null));
          } else if (table.values) table.values.push(kept.map(() => null));
          table.rows.push(kept);
          table.row_numbers.push(row.number);
        }
      }
      read.push({ sheet, table, columns, extras });
    }
  } catch (e) {
    if (e instanceof ParseFailure) throw e;
    throw corrupt(`XLSX could not be read: ${describeError(e)}`, e);
  } finally {
    (reader as unknown as { stream?: { destroy(): void } }).stream?.destroy();
    input.destroy();
  }

  // Sheets in workbook order (the ZIP order the reader saw them in can differ).
  const model = ((reader as unknown as { model?: { sheets?: SheetModel[] } }).model?.sheets ?? []);
  const order = model.length > 0 ? model : read.map((r, i) => ({ id: Number(r.sheet.id) || i + 1, name: r.table.source.sheet!, state: r.sheet.state }));
  const blocks: Block[] = [];
  const textBlock = (text: string) => {
    if (budget.textFull) { budget.truncate('text'); return; }
    blocks.push({ type: 'text', text });
    budget.addText(text.length + 2);
  };
  const sheets: SheetInfo[] = order.map((m, index) => {
    const found = read.find((r) => r.table.source.sheet === m.name) ?? read.find((r) => String(r.sheet.id) === String(m.id));
    const info: SheetInfo = {
      name: m.name,
      index,
      hidden: m.state === 'hidden' || m.state === 'veryHidden',
      row_count: found?.table.row_count ?? 0,
      column_count: found?.columns ?? 0,
      truncated: found?.table.truncated ?? false,
    };
    // The header and footer Excel prints on the sheet's pages, before and after its cells.
    for (const h of found?.extras?.headers ?? []) textBlock(`Header (${m.name}): ${h}`);
    if (found && found.table.rows.length > 0) {
      info.block = blocks.length;
      blocks.push({ ...found.table, source: { kind: 'xlsx', sheet: m.name }, caption: `Sheet: ${m.name}` });
    }
    for (const f of found?.extras?.footers ?? []) textBlock(`Footer (${m.name}): ${f}`);
    return info;
  });
  // Text boxes and shapes (drawings), chart titles and labels, SmartArt text: not cells, but text
  // a reader sees on the sheet; after the sheets, one block per part in part order.
  const graphics = [...zip.entries.keys()]
    .filter((name) => /^xl\/(drawings\/drawing|charts\/chart|diagrams\/data)\d+\.xml$/.test(name))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  for (const name of graphics) {
    if (budget.textFull) { budget.truncate('text'); break; }
    const text = unescapeXml(graphicText((await zip.readText(name, budget.limits.maxUnzippedBytes)) ?? ''));
    if (text === '') continue;
    blocks.push({ type: 'text', text });
    budget.addText(text.length + 2);
  }
  return { blocks, sheets, meta: { ...meta, sheet_count: sheets.length, row_count: total }, warnings: [], parser: 'exceljs' };
}

const maxMergedListed = 1000;

/**
 * Merged ranges that span rows, while the rows stream past: the first cell's text (and value) is
 * remembered on the range's first row and shown again on each later row of the range that has
 * content of its own (a label merged down a column, `North` beside each of its rows; a merged title
 * over empty rows is not repeated). Ranges over one row only keep their value in the first cell.
 */
class MergeFill {
  private readonly pending: SheetExtras['merges'];
  private open: { top: number; left: number; bottom: number; text?: string; value?: CellValue }[] = [];

  constructor(merges: SheetExtras['merges']) {
    this.pending = merges.filter((m) => m.bottom > m.top).sort((a, b) => b.top - a.top);
  }

  get active(): boolean {
    return this.pending.length > 0 || this.open.length > 0;
  }

  fill(rowNumber: number, cells: string[], values: CellValue[], blank: boolean): void {
    while (this.pending.length > 0 && this.pending[this.pending.length - 1]!.top <= rowNumber) this.open.push({ ...this.pending.pop()! });
    this.open = this.open.filter((m) => m.bottom >= rowNumber);
    for (const m of this.open) {
      const i = m.left - 1;
      if (m.top === rowNumber) { m.text = cells[i] ?? ''; m.value = values[i]; continue; }
      if (blank || m.text === undefined || m.text === '' || (cells[i] !== undefined && cells[i] !== '')) continue;
      cells[i] = m.text;
      if (m.value !== undefined) values[i] = m.value;
    }
  }
}

/** An ISO 8601 date or date-time as stored in a type-d cell (no zone: read as UTC, like serials). */
function isoDate(text: string): Date | undefined {
  const zoned = /(Z|[+-]\d{2}:?\d{2})$/.test(text) || !text.includes('T') ? text : `${text}Z`;
  const d = new Date(/^\d{4}-\d{2}-\d{2}$/.test(zoned) ? `${zoned}T00:00:00Z` : zoned);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

type CellValue = number | boolean | string | null;

/**
 * Formats Excel shows as the reader's locale short date or date-time (built-in ids 14 and 22, named
 * by exceljs as below): the locale is not in the file, so these are given as ISO 8601, unambiguous.
 */
const localeDateFormats = new Set(['mm-dd-yy', 'm/d/yy h:mm', 'm/d/yy']);
const dayMs = 86_400_000;
/** Serial day number of 1970-01-01 in the 1900 date system (exceljs' dates are UTC instants). */
const unixEpochSerial = 25_569;

/**
 * The value of the cell shownText read last, when a program would want it beside the text (a number
 * shown formatted, a date), else undefined. Module state rather than a { text, value } object per
 * cell: hundreds of thousands of cells made that a measurable share of the garbage collector's work.
 */
let shownValue: CellValue | undefined;

const isGeneral = (format: string) => format === 'General' || /^general$/i.test(format);

/** What a cell shows: its number format applied (its value, when wanted, in shownValue). */
function shownText(cell: StreamCell, nf: NumFmt): string {
  shownValue = undefined;
  let value = cell.value;
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const v = value as Record<string, unknown>;
    if ('formula' in v || 'sharedFormula' in v) value = v.result;
  }
  if (typeof value === 'number') {
    const format = cell.numFmt;
    if (Number.isFinite(value) && format && !isGeneral(format)) {
      const text = formatWith(nf, format, value);
      if (text !== undefined) {
        if (text !== formatNumber(value)) shownValue = value;
        return text;
      }
    }
    return formatNumber(value);
  }
  if (value instanceof Date && !Number.isNaN(value.getTime())) {
    const iso = formatDate(value);
    const format = cell.numFmt;
    if (format && !localeDateFormats.has(format)) {
      // exceljs turned the serial number into an instant (1904 date system included); numfmt takes
      // the 1900 system's serial of that instant.
      const serial = value.getTime() / dayMs + unixEpochSerial;
      const text = formatWith(nf, format, serial);
      if (text !== undefined && text !== '') {
        shownValue = iso;
        return text;
      }
    }
    return iso;
  }
  return cellText(value);
}

const badFormats = new Set<string>();

/** The number as the format shows it, or undefined when numfmt cannot read the format. */
function formatWith(nf: NumFmt, format: string, value: number): string | undefined {
  if (badFormats.has(format)) return undefined;
  try {
    return nf.format(format, value, { throws: true, nbsp: false });
  } catch {
    if (badFormats.size < 1000) badFormats.add(format);
    return undefined;
  }
}

/** What a cell shows, as text. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return formatNumber(value);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (value instanceof Date) return formatDate(value);
  if (typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (Array.isArray(v.richText)) return (v.richText as { text?: string }[]).map((r) => r.text ?? '').join('');
    if ('formula' in v || 'sharedFormula' in v) return cellText(v.result);
    if ('hyperlink' in v) return cellText(v.text ?? v.hyperlink);
    if (typeof v.error === 'string') return v.error;
    if ('text' in v) return cellText(v.text);
  }
  return '';
}

/** Whether cellText(value) would be blank (empty or whitespace), without building the text. */
function isBlankCell(value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (typeof value === 'string') return isBlank(value);
  if (typeof value === 'number' || typeof value === 'boolean') return false;
  if (value instanceof Date) return Number.isNaN(value.getTime());
  return isBlank(cellText(value));
}

function isBlank(text: string): boolean {
  return text.length === 0 || text.trim().length === 0;
}

/** Like Excel: integers as they are, other numbers to 15 significant digits. */
function formatNumber(n: number): string {
  const s = String(n);
  // Fifteen characters cannot hold more than fifteen significant digits (most numbers stop here).
  if (s.length <= 15 || !Number.isFinite(n) || Number.isInteger(n)) return s;
  // The shortest round-trip form is already the answer when it has at most 15 significant digits
  // (rounding to 15 digits and back gives the same number); only longer ones need rounding.
  let digits = 0;
  let leading = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 101 /* e */) break;
    if (c < 48 || c > 57 || (leading && c === 48)) continue;
    leading = false;
    digits++;
  }
  return digits <= 15 ? s : String(Number(n.toPrecision(15)));
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));

/** `YYYY-MM-DD` for a whole day, else ISO 8601 (milliseconds only when there are some). */
function formatDate(d: Date): string {
  const t = d.getTime();
  if (Number.isNaN(t)) return '';
  const year = d.getUTCFullYear();
  if (year >= 1000 && year <= 9999) {
    if (t % dayMs === 0) return `${year}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`;
    const iso = d.toISOString();
    return t % 1000 === 0 ? `${iso.slice(0, 19)}Z` : iso;
  }
  const iso = d.toISOString(); // years before 1000 or after 9999: toISOString's own padding/sign
  if (iso.endsWith('T00:00:00.000Z')) return iso.slice(0, 10);
  return iso.replace(/\.000Z$/, 'Z');
}
