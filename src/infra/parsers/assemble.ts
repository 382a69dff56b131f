/**
 * Turns what a format extractor read (an ordered list of text and table blocks plus metadata) into
 * the ParseResult: the full text (blocks joined by a blank line, cut exactly at maxTextChars), the
 * pages / sheets / tables views, and chunks with their locations. Kept apart from the extractors so
 * every format gets the same text layout, limits and chunking.
 */
import { Budget } from './budget';
import { chunkRowLines, chunkText, isBlankRow, rowText, type ChunkOptions } from './chunk';
import { storableText } from '../../lib/text';
import type { Chunk, ChunkLocation, ParseKind, ParseMetadata, ParseResult, ParsedSheet, ParsedTable, TableSource } from './types';

export interface TextBlock {
  type: 'text';
  text: string;
  /** PDF: the page this block is. */
  page?: number;
  /** DOCX: the block is a heading. */
  heading?: boolean;
}

export interface TableBlock {
  type: 'table';
  source: TableSource;
  rows: string[][];
  row_numbers: number[];
  /** Rows in the source (read), which can exceed rows.length. */
  row_count: number;
  truncated: boolean;
  /** The first row is a header: it is repeated at the top of every chunk of this table. */
  header: boolean;
  /** A line put at the top of every chunk, e.g. `Sheet: Q1`. */
  caption?: string;
  /** XLSX: the cells' values beside `rows`, where a cell shows its number differently (else null). */
  values?: (number | boolean | string | null)[][];
  /** XLSX: the sheet's merged ranges (`A1:C1`). */
  merged_cells?: string[];
}

export type Block = TextBlock | TableBlock;

export interface SheetInfo {
  name: string;
  index: number;
  hidden: boolean;
  row_count: number;
  column_count: number;
  truncated: boolean;
  /** Index into the blocks of this sheet's table block, if it had rows. */
  block?: number;
}

export interface Extracted {
  blocks: Block[];
  meta: Partial<ParseMetadata>;
  sheets?: SheetInfo[];
  warnings: string[];
  parser: string;
}

const separator = '\n\n';
const maxWarnings = 20;

interface Span { block: number; start: number; end: number; rowStarts?: number[]; lines?: string[] }

export function assemble(kind: ParseKind, extracted: Extracted, budget: Budget, meta: { content_type: string; size_bytes: number }, chunking: ChunkOptions = {}): ParseResult {
  // Before the layout, so the text, its views, the chunks and their offsets all agree.
  const x = storableExtract(extracted);
  const limit = budget.limits.maxTextChars;
  let text = '';
  const spans: Span[] = [];
  const kept: Block[] = [];
  const keptIndex = new Map<number, number>(); // x.blocks index → kept index

  for (const [original, block] of x.blocks.entries()) {
    const sep = text.length > 0 ? separator : '';
    const room = limit - text.length - sep.length;
    if (block.type === 'text') {
      const body = block.text.trim();
      if (body === '') continue;
      if (room <= 0) { budget.truncate('text'); break; }
      const piece = body.length <= room ? body : cutAtSpace(body, room);
      if (piece.length < body.length) budget.truncate('text');
      if (piece === '') break;
      text += sep;
      spans.push({ block: kept.length, start: text.length, end: text.length + piece.length });
      keptIndex.set(original, kept.length);
      kept.push({ ...block, text: piece });
      text += piece;
      if (piece.length < body.length) break;
    } else {
      if (block.rows.length === 0) continue;
      if (room <= 0) { budget.truncate('text'); break; }
      // Each row's text is built once: for the full text here and for its chunks below.
      const rowStarts: number[] = [];
      const lines: string[] = [];
      let length = 0;
      let n = 0;
      for (; n < block.rows.length; n++) {
        let line = rowText(block.rows[n]!);
        if (storableText(line) !== line) {
          block.rows[n] = block.rows[n]!.map(storableText);
          line = rowText(block.rows[n]!);
        }
        const sep = n > 0 ? 1 : 0;
        if (length + sep + line.length > room) break;
        lines.push(line);
        length += sep;
        rowStarts.push(length);
        length += line.length;
      }
      const body = lines.join('\n');
      const table: TableBlock = n < block.rows.length
        ? { ...block, rows: block.rows.slice(0, n), row_numbers: block.row_numbers.slice(0, n), ...(block.values ? { values: block.values.slice(0, n) } : {}), truncated: true }
        : block;
      if (n < block.rows.length) budget.truncate('text');
      if (n === 0) break;
      text += sep;
      const start = text.length;
      spans.push({ block: kept.length, start, end: start + body.length, rowStarts: rowStarts.map((r) => r + start), lines });
      keptIndex.set(original, kept.length);
      kept.push(table);
      text += body;
      if (table !== block) break;
    }
  }

  // Tables: every table block that made it into the text, in order.
  const tables: ParsedTable[] = [];
  const tableOfBlock = new Map<number, number>();
  kept.forEach((block, i) => {
    if (block.type !== 'table') return;
    tableOfBlock.set(i, tables.length);
    tables.push({ index: tables.length, source: block.source, rows: block.rows, ...(block.values ? { values: block.values } : {}), row_numbers: block.row_numbers, row_count: block.row_count, truncated: block.truncated, ...(block.merged_cells ? { merged_cells: block.merged_cells } : {}) });
  });

  const chunks = buildChunks(text, kept, spans, tableOfBlock, chunking);
  const reasons = [...budget.reasons].sort();
  const result: ParseResult = {
    kind,
    text,
    metadata: {
      ...x.meta,
      content_type: meta.content_type,
      size_bytes: meta.size_bytes,
      table_count: tables.length,
      char_count: text.length,
      chunk_count: chunks.length,
      truncated: reasons.length > 0,
      truncated_reasons: reasons,
      warnings: dedupe(x.warnings).slice(0, maxWarnings),
      parser: x.parser,
    },
    chunks,
  };
  if (kind === 'pdf') {
    result.pages = kept.flatMap((b) => (b.type === 'text' && b.page !== undefined ? [{ number: b.page, text: b.text }] : []));
  }
  if (kind !== 'pdf') result.tables = tables;
  if (kind === 'csv') {
    const [table] = tables;
    result.header = table?.rows[0] ?? [];
    result.rows = table?.rows.slice(1) ?? [];
  }
  if (kind === 'xlsx') result.sheets = (x.sheets ?? []).map((s) => sheetView(s, keptIndex, tableOfBlock, tables));
  return result;
}

/**
 * Every text the extractor read, without what no store keeps (storableText, lib/text.ts): NUL
 * dropped, a lone surrogate as U+FFFD. The result is stored as JSON (where both were escapes) but its chunks as
 * plain text, which PostgreSQL refused (a 500) and the two engines changed differently.
 */
function storableExtract(x: Extracted): Extracted {
  const some = <T extends object>(o: T, key: keyof T) => (typeof o[key] === 'string' ? { [key]: storableText(o[key] as string) } : {});
  return {
    ...x,
    blocks: x.blocks.map((b): Block => (b.type === 'text'
      ? { ...b, text: storableText(b.text) }
      // Table cells are made storable row by row in assemble(), where each row's text is built
      // anyway: testing that one line is cheaper than every cell (250,000 on a 50,000-row sheet).
      : { ...b, ...some(b, 'caption'), source: { ...b.source, ...some(b.source, 'sheet'), ...some(b.source, 'heading') } })),
    meta: Object.fromEntries(Object.entries(x.meta).map(([k, v]) => [k, typeof v === 'string' ? storableText(v) : Array.isArray(v) ? v.map((s) => (typeof s === 'string' ? storableText(s) : s)) : v])),
    ...(x.sheets ? { sheets: x.sheets.map((s) => ({ ...s, name: storableText(s.name) })) } : {}),
    warnings: x.warnings.map(storableText),
  };
}

function sheetView(s: SheetInfo, keptIndex: Map<number, number>, tableOfBlock: Map<number, number>, tables: ParsedTable[]): ParsedSheet {
  const k = s.block === undefined ? undefined : keptIndex.get(s.block);
  const t = k === undefined ? undefined : tableOfBlock.get(k);
  const table = t === undefined ? undefined : tables[t];
  const dropped = s.block !== undefined && k === undefined;
  return {
    name: s.name,
    index: s.index,
    hidden: s.hidden,
    table: t ?? null,
    row_count: s.row_count,
    column_count: s.column_count,
    truncated: s.truncated || dropped || (table?.truncated ?? false),
  };
}

function buildChunks(text: string, blocks: Block[], spans: Span[], tableOfBlock: Map<number, number>, options: ChunkOptions): Chunk[] {
  const chunks: Chunk[] = [];
  const add = (body: string, start: number, end: number, location: ChunkLocation) =>
    chunks.push({ index: chunks.length, text: body, char_start: start, char_end: end, location });

  let i = 0;
  while (i < spans.length) {
    const span = spans[i]!;
    const block = blocks[span.block]!;
    if (block.type === 'table') {
      const table = tableOfBlock.get(span.block)!;
      const header = block.header && block.rows.length > 1 ? block.rows[0]! : undefined;
      const offset = header ? 1 : 0;
      const lines = span.lines!;
      const context = [block.caption ?? '', header ? lines[0]! : ''];
      const body: (string | undefined)[] = [];
      for (let r = offset; r < block.rows.length; r++) body.push(isBlankRow(block.rows[r]!) ? undefined : lines[r]);
      for (const c of chunkRowLines(body, context, options)) {
        const first = c.first + offset;
        const last = c.last + offset;
        const start = span.rowStarts![first]!;
        const end = last + 1 < span.rowStarts!.length ? span.rowStarts![last + 1]! - 1 : span.end;
        add(c.text, start, end, {
          ...(block.source.sheet !== undefined ? { sheet: block.source.sheet } : {}),
          table,
          row_start: block.row_numbers[first],
          row_end: block.row_numbers[last],
          ...(block.source.heading !== undefined ? { heading: block.source.heading } : {}),
        });
      }
      i++;
      continue;
    }
    // A run of consecutive text blocks is chunked as one piece of prose.
    let j = i;
    while (j + 1 < spans.length && blocks[spans[j + 1]!.block]!.type === 'text') j++;
    const runStart = span.start;
    const runEnd = spans[j]!.end;
    const run = spans.slice(i, j + 1);
    for (const piece of chunkText(text.slice(runStart, runEnd), options)) {
      const start = runStart + piece.start;
      const end = runStart + piece.end;
      add(piece.text, start, end, proseLocation(blocks, spans, run, start, end, i));
    }
    i = j + 1;
  }
  return chunks;
}

function proseLocation(blocks: Block[], allSpans: Span[], run: Span[], start: number, end: number, runIndex: number): ChunkLocation {
  const covered = run.filter((s) => s.end > start && s.start < end);
  const pages = covered.map((s) => (blocks[s.block] as TextBlock).page).filter((p): p is number => p !== undefined);
  const location: ChunkLocation = {};
  if (pages.length > 0) {
    location.page = Math.min(...pages);
    const last = Math.max(...pages);
    if (last !== location.page) location.page_end = last;
  }
  // Nearest heading at or before the chunk's start, looking back across earlier runs too.
  const firstCovered = covered[0] ? allSpans.indexOf(covered[0]) : runIndex;
  for (let k = firstCovered; k >= 0; k--) {
    const b = blocks[allSpans[k]!.block]!;
    if (b.type === 'text' && b.heading) { location.heading = b.text.slice(0, 200); break; }
  }
  return location;
}

/** The longest prefix of `text` of at most `room` characters that ends at whitespace if it can. */
function cutAtSpace(text: string, room: number): string {
  if (room <= 0) return '';
  const hard = text.slice(0, room);
  const soft = hard.replace(/\s+\S*$/, '');
  return (soft.length >= room * 0.8 ? soft : hard).trimEnd();
}

function dedupe(items: string[]): string[] {
  return [...new Set(items)];
}
