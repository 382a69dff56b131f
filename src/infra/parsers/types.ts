/**
 * Types of the document parsing engine: the limits a parse runs under and the structured result it
 * returns. The result is plain JSON (snake_case, like the rest of the API) so the parse module can
 * store it and return it as the parse job's `result` unchanged. Described in docs/parsing.md.
 */

export type ParseKind = 'pdf' | 'docx' | 'csv' | 'xlsx';

/**
 * Hard limits end the parse with a ParseFailure; soft limits cut the result down and say so in
 * `metadata.truncated` / `metadata.truncated_reasons`.
 */
export interface ParseLimits {
  /** hard: size of the input file. */
  maxInputBytes: number;
  /** hard: pages of a PDF. */
  maxPages: number;
  /** hard: CSV records / XLSX rows read, all sheets together (the whole file is read to count). */
  maxSourceRows: number;
  /** hard: DOCX/XLSX: bytes all ZIP entries inflate to (zip-bomb guard, checked by inflating). */
  maxUnzippedBytes: number;
  /** hard: DOCX/XLSX: number of ZIP entries. */
  maxZipEntries: number;
  /** hard: wall clock for one parse; the worker thread is terminated when it runs out. */
  timeoutMs: number;
  /** hard: V8 old-generation heap of the worker thread (MiB). */
  maxMemoryMb: number;
  /** soft: characters of `text` (pages, chunks and tables are cut to match). */
  maxTextChars: number;
  /** soft: table rows kept in the result, all tables together. */
  maxRows: number;
  /** soft: table cells kept in the result, all tables together. */
  maxCells: number;
  /** soft: columns kept per row (a row reaching column XFD must not become 16384 strings). */
  maxColumns: number;
  /** soft: characters kept per cell. */
  maxCellChars: number;
}

export const defaultParseLimits: Readonly<ParseLimits> = Object.freeze({
  maxInputBytes: 256 * 1024 * 1024,
  maxPages: 5_000,
  maxSourceRows: 250_000,
  maxUnzippedBytes: 256 * 1024 * 1024,
  maxZipEntries: 10_000,
  timeoutMs: 60_000,
  maxMemoryMb: 512,
  maxTextChars: 2_000_000,
  maxRows: 20_000,
  maxCells: 400_000,
  maxColumns: 500,
  maxCellChars: 10_000,
});

export function resolveParseLimits(limits: Partial<ParseLimits> = {}): ParseLimits {
  const merged = { ...defaultParseLimits } as ParseLimits;
  for (const [key, value] of Object.entries(limits) as [keyof ParseLimits, number | undefined][]) {
    if (value === undefined) continue;
    if (!Number.isFinite(value) || value <= 0) throw new RangeError(`parse limit ${key} must be a positive number, got ${value}`);
    merged[key] = value;
  }
  return merged;
}

export interface ParsedPage {
  /** 1-based page number. */
  number: number;
  text: string;
}

export interface ParsedSheet {
  name: string;
  /** 0-based position in the workbook. */
  index: number;
  hidden: boolean;
  /**
   * Index into `tables` of the sheet's rows (non-empty rows in sheet order, cells as displayed text,
   * with their sheet row numbers); null when none of its rows made it into the result. The rows
   * are not repeated here: in JSON that doubled the tabular part of every workbook.
   */
  table: number | null;
  /** Non-empty rows in the sheet (read), which can exceed its table's rows when truncated. */
  row_count: number;
  column_count: number;
  truncated: boolean;
}

export interface TableSource {
  kind: ParseKind;
  /** XLSX: sheet name. */
  sheet?: string;
  /** DOCX: nearest heading before the table. */
  heading?: string;
}

export interface ParsedTable {
  /** 0-based position among the document's tables. */
  index: number;
  source: TableSource;
  /** All rows including a header row, as in the source. */
  rows: string[][];
  /**
   * XLSX, only when some cell shows its value formatted: the values beside `rows` (same shape),
   * the number (a date as ISO 8601) where the shown text differs from it, else null.
   */
  values?: (number | boolean | string | null)[][];
  /** 1-based source row numbers of `rows` (CSV record number, sheet row number, DOCX table row). */
  row_numbers: number[];
  row_count: number;
  truncated: boolean;
  /**
   * XLSX: the sheet's merged ranges as written (`A1:C1`, at most 1000). A range over several rows
   * shows its first cell's text on each of its rows that has other content; otherwise the text is
   * in the range's first cell only.
   */
  merged_cells?: string[];
}

export interface ChunkLocation {
  /** PDF: first page the chunk covers (1-based) and, when it spans pages, the last one. */
  page?: number;
  page_end?: number;
  /** XLSX: sheet name. */
  sheet?: string;
  /** Tables: index into `tables`. */
  table?: number;
  /** Tables: first and last source row number in the chunk (inclusive). */
  row_start?: number;
  row_end?: number;
  /** DOCX: nearest heading before the chunk. */
  heading?: string;
}

export interface Chunk {
  index: number;
  text: string;
  /** Span of `text` (the document's full text) this chunk covers; a table chunk also repeats its header. */
  char_start: number;
  char_end: number;
  location: ChunkLocation;
}

export type TruncationReason = 'text' | 'rows' | 'cells' | 'columns' | 'cell_chars';

export interface ParseMetadata {
  content_type: string;
  size_bytes: number;
  page_count?: number;
  sheet_count?: number;
  table_count: number;
  /** CSV records / XLSX rows read from the source (all of them, also when truncated). */
  row_count?: number;
  title?: string;
  /** Every author, joined by `; ` when there are several (PDF: `authors` lists them). */
  author?: string;
  /** PDF: the authors when there are more than one (XMP dc:creator). */
  authors?: string[];
  subject?: string;
  keywords?: string;
  creator?: string;
  producer?: string;
  created_at?: string;
  modified_at?: string;
  language?: string;
  /** CSV: delimiter and encoding the parser used. */
  delimiter?: string;
  encoding?: string;
  /** CSV: 1 when a BOM or the Content-Type charset gave the encoding, else the detector's confidence (0–1). */
  encoding_confidence?: number;
  char_count: number;
  chunk_count: number;
  truncated: boolean;
  truncated_reasons: TruncationReason[];
  /**
   * Present (true) only when the parse found no text at all; `warnings[0]` then says why. The parse
   * still completes (a scanned PDF has no text layer), but it is not a success to take silently.
   */
  no_text?: boolean;
  /** Non-fatal problems reported by the library (capped). */
  warnings: string[];
  parser: string;
}

export interface ParseResult {
  kind: ParseKind;
  /** Full text; paragraphs separated by a blank line, table rows as `cell | cell` lines. */
  text: string;
  pages?: ParsedPage[];
  sheets?: ParsedSheet[];
  /** CSV: the first record and the records after it. */
  header?: string[];
  rows?: string[][];
  tables?: ParsedTable[];
  metadata: ParseMetadata;
  chunks: Chunk[];
}

/**
 * A ParseResult as JSON text (exactly `JSON.stringify(result)`), serialized inside the runner, plus
 * its chunks as objects. For callers that store or send the result as JSON anyway: the large result
 * crosses the process boundary as one string instead of a structured clone of thousands of objects,
 * and is never rebuilt as objects on the server thread.
 */
export interface SerializedParse {
  json: string;
  chunks: Chunk[];
}
