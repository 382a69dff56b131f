/**
 * Limits: soft limits cut the result and say so; hard limits fail with a reason; a parse that
 * runs too long is killed (timeout) and one that eats memory dies alone (memory), and the parser
 * keeps working afterwards. Also the opt-in worker-thread isolation.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createDocumentParser, ParseFailure, type ParseResult } from './index';
import { csvText, knownPdf, manyRowsCsv, pdfDocument, pdfFlateBomb, xlsxWorkbook } from '../../../test/fixtures/documents';

const PDF = 'application/pdf';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const CSV = 'text/csv';

const dir = mkdtempSync(join(tmpdir(), 'svc-limits-'));
const parser = createDocumentParser({ concurrency: 2 });
const file = (name: string, bytes: Uint8Array | string) => {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return { path };
};
const files: Record<string, { path: string }> = {};

beforeAll(async () => {
  const pages = Array.from({ length: 6 }, (_, p) => Array.from({ length: 4 }, (_, i) => `Page ${p + 1} paragraph ${i + 1}. ${'Plenty of ordinary words fill this line. '.repeat(4)}`));
  files.longPdf = file('long.pdf', await pdfDocument({ pages }));
  files.pdf = file('known.pdf', await pdfDocument(knownPdf));
  files.xlsx = file('inventory.xlsx', await xlsxWorkbook());
  files.csv = file('thousand.csv', manyRowsCsv(1000));
  files.million = file('million.csv', manyRowsCsv(1_000_000));
});
afterAll(async () => {
  await parser.close();
  rmSync(dir, { recursive: true, force: true });
});

async function failure(promise: Promise<ParseResult>): Promise<ParseFailure> {
  const e = await promise.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(ParseFailure);
  return e as ParseFailure;
}

describe('soft limits truncate and say so', () => {
  test('PDF text over maxTextChars: cut, fewer pages extracted, page_count still true', async () => {
    const full = await parser.parse(files.longPdf!, PDF);
    expect(full.metadata.truncated).toBe(false);
    expect(full.text.length).toBeGreaterThan(4000);
    const r = await parser.parse(files.longPdf!, PDF, { maxTextChars: 2000 });
    expect(r.metadata).toMatchObject({ truncated: true, truncated_reasons: ['text'], page_count: 6 });
    expect(r.text.length).toBeLessThanOrEqual(2000);
    expect(full.text.startsWith(r.text)).toBe(true);
    expect(r.pages!.length).toBeLessThan(6);
    for (const c of r.chunks) expect(c.char_end).toBeLessThanOrEqual(r.text.length);
  });

  test('CSV rows over maxRows: the first rows are kept, the count is exact', async () => {
    const r = await parser.parse(files.csv!, CSV, { maxRows: 101 });
    expect(r.header).toEqual(['id', 'name', 'value']);
    expect(r.rows).toHaveLength(100);
    expect(r.rows!.at(-1)).toEqual(['100', 'row 100', '3']);
    expect(r.metadata).toMatchObject({ row_count: 1001, truncated: true, truncated_reasons: ['rows'] });
    expect(r.tables![0]).toMatchObject({ row_count: 1001, truncated: true });
    expect(r.chunks.at(-1)!.location.row_end).toBe(101);
  });

  test('columns and cell length', async () => {
    const wide = csvText([['a', 'b', 'c', 'd', 'e'], ['1', 'a very long cell indeed', '3', '4', '5']]);
    const r = await parser.parse(file('wide.csv', wide), CSV, { maxColumns: 3, maxCellChars: 6 });
    expect(r.tables![0]!.rows).toEqual([['a', 'b', 'c'], ['1', 'a very', '3']]);
    expect(r.metadata.truncated_reasons).toEqual(['cell_chars', 'columns']);
  });

  test('XLSX rows over maxRows: the later sheet is listed, empty and marked truncated', async () => {
    const r = await parser.parse(files.xlsx!, XLSX, { maxRows: 3 });
    expect(r.sheets!.map((s) => [s.name, s.table === null ? 0 : r.tables![s.table]!.rows.length, s.row_count, s.truncated])).toEqual([
      ['Stock', 3, 5, true],
      ['Notes', 0, 3, true],
    ]);
    expect(r.sheets![1]!.table).toBeNull();
    expect(r.metadata).toMatchObject({ truncated: true, truncated_reasons: ['rows'], row_count: 8 });
  });
});

describe('hard limits fail', () => {
  test('input bytes and pages', async () => {
    const big = await failure(parser.parse(files.pdf!, PDF, { maxInputBytes: 1000 }));
    expect(big).toMatchObject({ reason: 'too_large', code: 'PARSE_FAILED' });
    expect(big.message).toMatch(/^PDF is \d+(\.\d)? KiB, over the parse limit of 1000 bytes$/);
    const pages = await failure(parser.parse(files.pdf!, PDF, { maxPages: 2 }));
    expect(pages).toMatchObject({ reason: 'too_large', message: 'PDF has 3 pages (limit 2)' });
    const sheetRows = await failure(parser.parse(files.xlsx!, XLSX, { maxSourceRows: 6 }));
    expect(sheetRows).toMatchObject({ reason: 'too_large', message: 'XLSX has more than 6 rows (limit 6)' });
  });

  test('a parse that runs past timeoutMs is killed; the next parse works', async () => {
    const started = performance.now();
    const e = await failure(parser.parse(files.million!, CSV, { maxSourceRows: 2_000_000, timeoutMs: 300 }));
    expect(e).toMatchObject({ reason: 'timeout', message: 'parse did not finish within 300 ms; stopped' });
    expect(performance.now() - started).toBeLessThan(15_000);
    const ok = await parser.parse(files.csv!, CSV);
    expect(ok.metadata.row_count).toBe(1001);
  });

  test('a 1 MB PDF whose content stream inflates to 1 GiB dies alone with reason memory', async () => {
    const bomb = file('bomb.pdf', await pdfFlateBomb(1024 ** 3));
    const e = await failure(parser.parse(bomb, PDF, { maxMemoryMb: 128 }));
    expect(e.reason).toBe('memory');
    expect(e.message).toMatch(/^parse ran out of memory \((heap limit 128 MiB|process used \d+ MiB, limit 512 MiB)\); stopped$/);
    // This process is still here and so is the parser.
    expect(process.memoryUsage().rss).toBeLessThan(1024 ** 3);
    const ok = await parser.parse(files.pdf!, PDF);
    expect(ok.metadata.page_count).toBe(3);
  });
});

describe("isolation: 'thread'", () => {
  test('parses in a worker thread, and terminates it on timeout', async () => {
    const threads = createDocumentParser({ isolation: 'thread', concurrency: 1 });
    try {
      const ok = await threads.parse(files.csv!, CSV);
      expect(ok.rows).toHaveLength(1000);
      const e = await failure(threads.parse(files.million!, CSV, { maxSourceRows: 2_000_000, timeoutMs: 300 }));
      expect(e.reason).toBe('timeout');
      expect((await threads.parse(files.csv!, CSV)).metadata.row_count).toBe(1001);
    } finally {
      await threads.close();
    }
  });
});
