/**
 * parseDocument end to end: real documents generated with pdf-lib, docx and exceljs go through
 * the worker pool, so the expected text is known exactly; hostile inputs must fail with a
 * ParseFailure and leave the pool able to parse the next good document.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createDocumentParser, ParseFailure, type ParseResult } from './index';
import { csvText, docxDocument, garbage, knownPdf, manyRowsCsv, pdfDocument, pngLike, xlsxWorkbook, zipBomb } from '../../../test/fixtures/documents';

const PDF = 'application/pdf';
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const CSV = 'text/csv; charset=utf-8';

const dir = mkdtempSync(join(tmpdir(), 'svc-parse-'));
const parser = createDocumentParser({ concurrency: 2 });
const file = (name: string, bytes: Uint8Array | string) => {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return { path };
};
const files: Record<string, { path: string }> = {};

beforeAll(async () => {
  files.pdf = file('known.pdf', await pdfDocument(knownPdf));
  files.docx = file('report.docx', await docxDocument());
  files.xlsx = file('inventory.xlsx', await xlsxWorkbook());
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

describe('good documents', () => {
  test('PDF: three pages of known text, metadata, page-located chunks', async () => {
    const r = await parser.parse(files.pdf!, PDF);
    expect(r.kind).toBe('pdf');
    expect(r.pages!.map((p) => p.number)).toEqual([1, 2, 3]);
    expect(r.pages![1]!.text).toBe([
      'Chapter 2',
      'The analytical engine weaves algebraic patterns on page 2. Each sentence here is known to the test.',
      'A second paragraph on page 2 mentions the lighthouse exactly once.',
    ].join('\n\n'));
    expect(r.text).toBe(r.pages!.map((p) => p.text).join('\n\n'));
    expect(r.metadata).toMatchObject({
      page_count: 3, title: 'Field Notes', author: 'Ada Lovelace', created_at: '2024-03-01T10:00:00.000Z',
      content_type: PDF, truncated: false, truncated_reasons: [], char_count: r.text.length,
    });
    expect(r.metadata.parser).toMatch(/^pdfjs-dist 4\./);
    expect(r.chunks.length).toBeGreaterThanOrEqual(1);
    expect(r.chunks[0]!.location.page).toBe(1);
    for (const c of r.chunks) expect(r.text.slice(c.char_start, c.char_end)).toBe(c.text);
    expect(r.chunks.at(-1)!.location.page_end ?? r.chunks.at(-1)!.location.page).toBe(3);
  });

  test('PDF: chunks of a long document carry the pages they come from', async () => {
    const pages = Array.from({ length: 6 }, (_, p) => Array.from({ length: 4 }, (_, i) => `Page ${p + 1} paragraph ${i + 1}. ${'Several words of steady filler text follow here. '.repeat(4)}`));
    const r = await parser.parse(file('long.pdf', await pdfDocument({ pages })), PDF);
    expect(r.chunks.length).toBeGreaterThan(4);
    for (const c of r.chunks) {
      expect(c.text.length).toBeLessThanOrEqual(1200);
      const first = /Page (\d+) paragraph/.exec(c.text);
      if (first && c.text.startsWith('Page')) expect(c.location.page).toBe(Number(first[1]));
      const pagesMentioned = [...c.text.matchAll(/Page (\d+) paragraph/g)].map((m) => Number(m[1]));
      for (const p of pagesMentioned) expect(p).toBeGreaterThanOrEqual(c.location.page!);
      for (const p of pagesMentioned) expect(p).toBeLessThanOrEqual(c.location.page_end ?? c.location.page!);
    }
  });

  test('DOCX: heading, paragraphs and a table', async () => {
    const r = await parser.parse(files.docx!, DOCX);
    expect(r.kind).toBe('docx');
    expect(r.text).toBe([
      'Quarterly Report',
      'Revenue grew in every region this quarter. The northern office led the growth.',
      'Costs stayed flat, which the board noted with approval.',
      'Regional figures',
      'Region | Revenue | Growth\nNorth | 1200 | 12%\nSouth | 950 | 4%\nWest | 780 | 7%',
      'Figures are in thousands of euros.',
    ].join('\n\n'));
    expect(r.tables).toEqual([{
      index: 0,
      source: { kind: 'docx', heading: 'Regional figures' },
      rows: [['Region', 'Revenue', 'Growth'], ['North', '1200', '12%'], ['South', '950', '4%'], ['West', '780', '7%']],
      row_numbers: [1, 2, 3, 4], row_count: 4, truncated: false,
    }]);
    expect(r.metadata).toMatchObject({ title: 'Quarterly Report', author: 'Grace Hopper', table_count: 1, truncated: false });
    const tableChunk = r.chunks.find((c) => c.location.table === 0)!;
    expect(tableChunk.text).toBe('Regional figures\nRegion | Revenue | Growth\nNorth | 1200 | 12%\nSouth | 950 | 4%\nWest | 780 | 7%');
    expect(tableChunk.location).toEqual({ table: 0, row_start: 2, row_end: 4, heading: 'Regional figures' });
    expect(r.chunks.at(-1)!.location.heading).toBe('Regional figures');
  });

  test('XLSX: two sheets with numbers, dates, a formula result and rich text', async () => {
    const r = await parser.parse(files.xlsx!, XLSX);
    expect(r.kind).toBe('xlsx');
    expect(r.sheets!.map((s) => [s.name, s.index, s.row_count, s.column_count, s.hidden, s.truncated])).toEqual([
      ['Stock', 0, 5, 4, false, false],
      ['Notes', 1, 3, 2, false, false],
    ]);
    expect(r.sheets!.map((s) => s.table)).toEqual([0, 1]);
    expect(r.tables![0]!.rows).toEqual([
      ['Item', 'Quantity', 'Price', 'Restocked'],
      ['Bolts', '500', '0.25', '2024-01-15'],
      ['Nuts', '750', '0.1', '2024-02-20'],
      ['Washers', '1200', '0.05', '2024-03-05'],
      ['Total', '2450'],
    ]);
    expect(r.tables![1]!.rows[1]).toEqual(['Supplier', 'Acme Fasteners']);
    expect(r.tables!.map((t) => t.source)).toEqual([{ kind: 'xlsx', sheet: 'Stock' }, { kind: 'xlsx', sheet: 'Notes' }]);
    // The rows are in the tables only, not repeated under the sheets.
    expect(Object.keys(r.sheets![0]!).sort()).toEqual(['column_count', 'hidden', 'index', 'name', 'row_count', 'table', 'truncated']);
    expect(r.metadata).toMatchObject({ sheet_count: 2, row_count: 8, title: 'Inventory', author: 'Katherine Johnson' });
    expect(r.chunks.map((c) => c.location)).toEqual([
      { sheet: 'Stock', table: 0, row_start: 2, row_end: 5 },
      { sheet: 'Notes', table: 1, row_start: 2, row_end: 3 },
    ]);
    expect(r.chunks[1]!.text).toBe('Sheet: Notes\nTopic | Note\nSupplier | Acme Fasteners\nAudit | Counted by hand on Friday');
  });

  test('CSV: quoted fields, header, rows and row-located chunks', async () => {
    const rows = [['name', 'city', 'note'], ['Ann', 'Paris, France', 'said "hi"'], ['Bob', 'Oslo', 'two\nlines']];
    const r = await parser.parse(file('people.csv', csvText(rows)), CSV);
    expect(r.header).toEqual(['name', 'city', 'note']);
    expect(r.rows).toEqual([['Ann', 'Paris, France', 'said "hi"'], ['Bob', 'Oslo', 'two\nlines']]);
    expect(r.tables![0]!.rows).toEqual(rows);
    expect(r.text).toBe('name | city | note\nAnn | Paris, France | said "hi"\nBob | Oslo | two lines');
    expect(r.metadata).toMatchObject({ row_count: 3, delimiter: ',', encoding: 'utf-8' });
    expect(r.chunks).toHaveLength(1);
    expect(r.chunks[0]!.location).toEqual({ table: 0, row_start: 2, row_end: 3 });
  });

  test('CSV: line endings mixed within one file each end a record; one inside quotes stays in the value', async () => {
    const mixed = await parser.parse(file('mixed.csv', 'a,b,c\r\n1,2,3\n4,5,6\r7,8,9\r\n"q\r\nx",y,z\n'), CSV);
    expect(mixed.rows).toEqual([['1', '2', '3'], ['4', '5', '6'], ['7', '8', '9'], ['q\r\nx', 'y', 'z']]);
    const lfThenCrlf = await parser.parse(file('mixed2.csv', 'a,b\n1,2\r\n3,4\r\n'), CSV);
    expect(lfThenCrlf.rows).toEqual([['1', '2'], ['3', '4']]); // no stray \r in the last cell
    // Across the stream's chunks too: a CRLF file of ~1 MiB after an LF header.
    const long = `h1,h2\n${Array.from({ length: 40_000 }, (_, i) => `row${i},${'x'.repeat(20)}`).join('\r\n')}\r\n`;
    const big = await parser.parse(file('long.csv', long), CSV);
    expect(big.metadata.row_count).toBe(40_001);
    expect(big.rows!.every((r) => r.length === 2 && !r[1]!.includes('\r'))).toBe(true);
  });

  test('CSV: semicolons, a BOM and Latin-1 from the charset parameter', async () => {
    const semi = await parser.parse(file('semi.csv', '\ufeffa;b\n1;2\n'), 'text/csv');
    expect(semi.header).toEqual(['a', 'b']);
    expect(semi.metadata.delimiter).toBe(';');
    const latin = await parser.parse(file('latin.csv', Buffer.from('ville,pays\nGen\xe8ve,Suisse\n', 'latin1')), 'text/csv; charset=ISO-8859-1');
    expect(latin.rows).toEqual([['Genève', 'Suisse']]);
    const utf16 = await parser.parse(file('utf16.csv', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('nom\tville\nZoë\tGenève\n', 'utf16le')])), 'text/csv');
    expect(utf16.rows).toEqual([['Zoë', 'Genève']]);
    expect(utf16.metadata).toMatchObject({ encoding: 'utf-16le', delimiter: '\t' });
  });
});

describe('hostile and broken input', () => {
  test('unsupported content type', async () => {
    const e = await failure(parser.parse(files.pdf!, 'image/png'));
    expect(e.code).toBe('PARSE_UNSUPPORTED_TYPE');
    expect(e.message).toMatch(/cannot parse content type "image\/png"/);
  });

  test('broken PDF bytes', async () => {
    const pdf = Buffer.from(await pdfDocument(knownPdf));
    const e = await failure(parser.parse(file('broken.pdf', Buffer.concat([pdf.subarray(0, 300), garbage(4000)])), PDF));
    expect(e).toMatchObject({ code: 'PARSE_FAILED', reason: 'corrupt' });
    expect(e.message).toMatch(/^PDF is damaged or not a PDF: /);
  });

  test('DOCX zip bomb (1 GiB document.xml in a 1 MB file)', async () => {
    const path = join(dir, 'bomb.docx');
    await zipBomb(path, 'docx', 1024 ** 3);
    const e = await failure(parser.parse({ path }, DOCX));
    expect(e).toMatchObject({ code: 'PARSE_FAILED', reason: 'too_large' });
    expect(e.message).toMatch(/^DOCX would inflate to .* MiB \(limit 256 MiB\); refusing a possible zip bomb$/);
  });

  test('XLSX zip bomb that lies about its size (1 GiB sharedStrings.xml declared as a few hundred bytes)', async () => {
    const path = join(dir, 'liar.xlsx');
    await zipBomb(path, 'xlsx', 1024 ** 3, true);
    const e = await failure(parser.parse({ path }, XLSX));
    expect(e).toMatchObject({ code: 'PARSE_FAILED', reason: 'corrupt' });
    expect(e.message).toMatch(/xl\/sharedStrings\.xml declares \d+ bytes but inflates to more; refusing a possible zip bomb/);
  });

  test('a CSV of a million rows is refused past maxSourceRows', async () => {
    const e = await failure(parser.parse(file('million.csv', manyRowsCsv(1_000_000)), CSV));
    expect(e).toMatchObject({ code: 'PARSE_FAILED', reason: 'too_large' });
    expect(e.message).toBe('CSV has more than 250000 rows (limit 250000)');
  });

  test('content that does not match its type', async () => {
    const cases: [string, Uint8Array | string, string, RegExp][] = [
      ['image.pdf', pngLike(), PDF, /expected a PDF document, found a PNG image/],
      ['garbage.csv', garbage(20_000), CSV, /expected CSV text, found binary data/],
      ['report-as.xlsx', await docxDocument(), XLSX, /expected an Excel workbook \(XLSX\), found a Word document \(DOCX\)/],
      ['pdf-as.docx', await pdfDocument(knownPdf), DOCX, /expected a Word document \(DOCX\), found a PDF document/],
      ['text.docx', 'plain words, no zip here', DOCX, /expected a Word document \(DOCX\), found plain text/],
    ];
    for (const [name, bytes, type, message] of cases) {
      const e = await failure(parser.parse(file(name, bytes), type));
      expect(e.reason).toBe('corrupt');
      expect(e.message).toMatch(/^content does not match its type: /);
      expect(e.message).toMatch(message);
    }
  });

  test('empty and missing files', async () => {
    expect((await failure(parser.parse(file('empty.pdf', ''), PDF))).message).toBe('PDF is empty (0 bytes)');
    expect((await failure(parser.parse({ path: join(dir, 'nope.pdf') }, PDF))).reason).toBe('internal');
  });

  test('after all of that the same parser still parses good documents', async () => {
    const [pdf, docx, xlsx] = await Promise.all([parser.parse(files.pdf!, PDF), parser.parse(files.docx!, DOCX), parser.parse(files.xlsx!, XLSX)]);
    expect(pdf.metadata.page_count).toBe(3);
    expect(docx.tables).toHaveLength(1);
    expect(xlsx.sheets).toHaveLength(2);
  });
});
