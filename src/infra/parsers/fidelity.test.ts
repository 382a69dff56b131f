/**
 * What a person sees in a file is what the parse returns: each test is a defect found with real
 * documents, reproduced with a fixture made here (test/fixtures/fidelity.ts), asserting exact text.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { createDocumentParser } from './index';
import { xlsxWorkbook } from '../../../test/fixtures/documents';
import { altChunkDocx, chartDocx, cjkPdf, embeddedDocx, entryOrder, formattedWorkbook, headerFooterDocx, imageOnlyPdf, mergedWorkbook, notesDocx, numberingDocx, pdfLayoutCases, rezip, rubyDocx, strictWorkbook, textBoxDocx, textBoxWorkbook, xmpPdf } from '../../../test/fixtures/fidelity';

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const CSV = 'text/csv';
const PDF = 'application/pdf';
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

const dir = mkdtempSync(join(tmpdir(), 'svc-fidelity-'));
const parser = createDocumentParser({ concurrency: 1 });
const file = (name: string, bytes: Uint8Array | string) => {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return { path };
};
afterAll(async () => {
  await parser.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('XLSX', () => {
  test('a workbook whose ZIP stores its sheets before xl/workbook.xml reads like any other', async () => {
    const good = await xlsxWorkbook();
    const expected = await parser.parse(file('in-order.xlsx', good), XLSX);
    const first = ['xl/_rels/workbook.xml.rels', 'xl/sharedStrings.xml', 'xl/worksheets/sheet2.xml', 'xl/worksheets/sheet1.xml'];
    const sheetsFirst = await rezip(good, first);
    expect((await entryOrder(sheetsFirst)).slice(0, 4)).toEqual(first);
    const r = await parser.parse(file('sheets-first.xlsx', sheetsFirst), XLSX);
    expect(r.sheets!.map((s) => s.name)).toEqual(['Stock', 'Notes']);
    expect(r.tables).toEqual(expected.tables);
    expect(r.text).toBe(expected.text);
    // Sheets ahead of the shared strings too, and styles after the sheets: dates are still dates.
    const stylesLast = await rezip(good, ['xl/worksheets/sheet1.xml', 'xl/workbook.xml', 'xl/_rels/workbook.xml.rels', 'xl/sharedStrings.xml']);
    expect((await parser.parse(file('styles-last.xlsx', stylesLast), XLSX)).tables![0]!.rows[1]).toEqual(expected.tables![0]!.rows[1]);
  });
});

describe('XLSX cells as displayed', () => {
  test('numbers and dates are rendered with their number format; the value stays beside the text', async () => {
    const r = await parser.parse(file('formats.xlsx', await formattedWorkbook()), XLSX);
    const table = r.tables![0]!;
    expect(table.rows).toEqual([
      ['what', 'shown'],
      ['thousands', '1,599.99'],
      ['percent', '2.50%'],
      ['fraction', '2 1/2'],
      ['date', '17-May-07'],
      ['one decimal', '3.1'],
      ['zip code', '00123'],
      ['currency', '($5.00)'],
      ['time', '2024-01-15 13:30'],
      ['general', '0.3'],
      ['text', '007'],
    ]);
    expect(table.values).toEqual([
      [null, null],
      [null, 1599.99],
      [null, 0.025],
      [null, 2.5],
      [null, '2007-05-17'],
      [null, 3.14159],
      [null, 123],
      [null, -5],
      [null, '2024-01-15T13:30:00Z'],
      [null, null],
      [null, null],
    ]);
    expect(r.text).toContain('thousands | 1,599.99');
  });
});

describe('XLSX beyond the cells exceljs streams', () => {
  test('merged cells: a label merged down a column shows on each of its rows; the ranges are listed', async () => {
    const r = await parser.parse(file('merged.xlsx', await mergedWorkbook()), XLSX);
    const sales = r.tables![0]!;
    expect(sales.rows).toEqual([
      ['Sales by region'],
      ['Region', 'Quarter', 'Revenue'],
      ['North', 'Q1', '1200'],
      ['North', 'Q2', '1350'],
      ['South', 'Q1', '900'],
      ['Note: unaudited', '', 'end'],
    ]);
    expect(sales.row_numbers).toEqual([1, 3, 4, 5, 6, 7]);
    expect(sales.merged_cells).toEqual(['A1:C2', 'A4:A5', 'A7:B7']);
    expect(r.tables![1]!.merged_cells).toBeUndefined();
  });

  test('headers and footers, with Excel\'s codes rendered, before and after their sheet', async () => {
    const r = await parser.parse(file('merged.xlsx', await mergedWorkbook()), XLSX);
    expect(r.text).toBe([
      'Header (Sales): ACME &Co | Sales &[Tab] | &[Date]',
      'Sales by region\nRegion | Quarter | Revenue\nNorth | Q1 | 1200\nNorth | Q2 | 1350\nSouth | Q1 | 900\nNote: unaudited |  | end',
      'Footer (Sales): Page &[Page] of &[Pages]',
      'Header (Notes): Confidential',
      'Header (Notes): Cover page',
      'Plain',
    ].join('\n\n'));
    expect(r.sheets!.map((s) => s.table)).toEqual([0, 1]);
  });

  test('a Strict Open XML workbook: strings, formats, an ISO date cell, a boolean, a formula', async () => {
    const r = await parser.parse(file('strict.xlsx', await strictWorkbook()), XLSX);
    expect(r.sheets!.map((s) => s.name)).toEqual(['Ledger']);
    const table = r.tables![0]!;
    expect(table.rows).toEqual([
      ['Item', 'Amount', 'Date', 'Paid'],
      ['Rent & rates', '1,599.50', '15-Jan-24', 'TRUE'],
      ['Total', '1,599.50'],
    ]);
    // The date was read as the number 2024 (16-Jul-05) before.
    expect(table.values![1]).toEqual([null, 1599.5, '2024-01-15', null]);
  });
});

describe('CSV', () => {
  test('empty fields are data: every field kept, row widths as written, a record of only commas kept', async () => {
    const quotedEmpties = await parser.parse(file('empties.csv', 'a,b,c\r\n1,"",""\r\n'), CSV);
    expect(quotedEmpties.header).toEqual(['a', 'b', 'c']);
    expect(quotedEmpties.rows).toEqual([['1', '', '']]);
    const trailing = await parser.parse(file('trailing.csv', 'A,B,\r\n1,2,3\r\n'), CSV);
    expect(trailing.header).toEqual(['A', 'B', '']);
    expect(trailing.rows).toEqual([['1', '2', '3']]);
    const commas = await parser.parse(file('commas.csv', 'x,y,z\n1,2,3\n,,\n4,5,6\n'), CSV);
    expect(commas.rows).toEqual([['1', '2', '3'], ['', '', ''], ['4', '5', '6']]);
    expect(commas.tables![0]!.row_numbers).toEqual([1, 2, 3, 4]);
    expect(commas.metadata.row_count).toBe(4);
    // RFC 4180 besides: a quoted CRLF inside a field, a BOM, an empty trailing field.
    const rfc = await parser.parse(file('rfc.csv', '\ufeffname,note,\r\n"Ann","two\r\nlines",\r\n'), CSV);
    expect(rfc.header).toEqual(['name', 'note', '']);
    expect(rfc.rows).toEqual([['Ann', 'two\r\nlines', '']]);
  });

  test('Latin-1 and ISO-8859-7 uploaded as plain text/csv are detected, decoded and reported with a confidence', async () => {
    const latin = await parser.parse(file('latin.csv', Buffer.from('ville,pays\nGen\xe8ve,Suisse\nZ\xfcrich,Suisse\n', 'latin1')), CSV);
    expect(latin.rows).toEqual([['Genève', 'Suisse'], ['Zürich', 'Suisse']]);
    expect(latin.metadata.encoding).toMatch(/^(iso-8859-1|windows-1252)$/);
    expect(latin.metadata.encoding_confidence).toBeGreaterThan(0);
    expect(latin.metadata.encoding_confidence).toBeLessThan(1);
    expect(latin.metadata.warnings.join('\n')).toMatch(/not valid UTF-8 and declares no charset; decoded as (iso-8859-1|windows-1252) \(detected, confidence /);
    expect(latin.text).not.toContain('\ufffd');

    const iconv = (await import('iconv-lite')).default;
    const greek = iconv.encode('πόλη,χώρα\nΑθήνα,Ελλάδα\nΘεσσαλονίκη,Ελλάδα\nΠάτρα,Ελλάδα\n', 'iso-8859-7');
    const g = await parser.parse(file('greek.csv', greek), CSV);
    expect(g.header).toEqual(['πόλη', 'χώρα']);
    expect(g.rows).toEqual([['Αθήνα', 'Ελλάδα'], ['Θεσσαλονίκη', 'Ελλάδα'], ['Πάτρα', 'Ελλάδα']]);
    expect(g.metadata).toMatchObject({ encoding: 'iso-8859-7' });
    // Declared, it is taken as declared, confidence 1, no warning.
    const declared = await parser.parse(file('greek-declared.csv', greek), 'text/csv; charset=ISO-8859-7');
    expect(declared.rows).toEqual(g.rows);
    expect(declared.metadata).toMatchObject({ encoding: 'iso-8859-7', encoding_confidence: 1, warnings: [] });
    // Plain UTF-8 stays UTF-8 without a warning.
    const utf8 = await parser.parse(file('utf8.csv', 'ville,pays\nGenève,Suisse\n'), CSV);
    expect(utf8.metadata).toMatchObject({ encoding: 'utf-8', encoding_confidence: 1, warnings: [] });
  });
});

describe('DOCX text mammoth does not read', () => {
  test('ruby (phonetic guides): the base text, then the guide in parentheses', async () => {
    const r = await parser.parse(file('ruby.docx', await rubyDocx()), DOCX);
    expect(r.text).toBe('ここは東京(とうきょう)です。\n\nSecond paragraph.');
  });

  test('altChunk: an imported MHT page is read in place', async () => {
    const r = await parser.parse(file('altchunk.docx', await altChunkDocx()), DOCX);
    expect(r.text).toBe('Before the chunk.\n\nImported été report\n\nFirst imported paragraph & more.\n\nSecond imported paragraph.\n\nAfter the chunk.');
  });

  test('chart titles, series and categories, and SmartArt text, after their drawing', async () => {
    const r = await parser.parse(file('chart.docx', await chartDocx()), DOCX);
    expect(r.text).toBe('Figures follow.\n\nRevenue by region; 2024; North; South\n\nPlan; Build; Ship\n\nEnd.');
  });
});

describe('DOCX: what a reader sees around and beside the body', () => {
  test('headers first and footers last, once each, with their text boxes and tables', async () => {
    const r = await parser.parse(file('header.docx', await headerFooterDocx()), DOCX);
    expect(r.text).toBe('ACME Corp\n\nDraft for review\n\nQuarterly report | Confidential\n\nFirst body paragraph.\n\nSecond body paragraph.\n\nPage 1 of 2');
  });

  test('footnotes and endnotes numbered apart as Word shows them, comments marked with their author', async () => {
    const r = await parser.parse(file('notes.docx', await notesDocx()), DOCX);
    expect(r.text).toBe('Revenue grew[1] and costs fell[i].\n\nMargins held[2].\n\nThe total was 4.2 million[AL1].'
      + '\n\n[1] Audited figures.\n\n[2] Before tax.\n\n[i] See the annual report.'
      + '\n\nComment [AL1] (Ann Lee): Check this figure against the audit.');
    expect(r.metadata.warnings).toEqual([]);
  });

  test('text boxes are read once each, with or without a VML fallback', async () => {
    const r = await parser.parse(file('boxes.docx', await textBoxDocx()), DOCX);
    expect(r.text).toBe('Before the boxes.\n\nBox with a fallback.\n\nSecond anchor.\n\nBox without a fallback.\n\nThird anchor.\n\nBare drawing box.\n\nAfter the boxes.');
    expect(r.metadata.warnings).toEqual([]);
  });

  test('embedded Word documents and workbooks (OLE objects, altChunk) are read one level deep; other kinds are named in a warning', async () => {
    const r = await parser.parse(file('embedded.docx', await embeddedDocx()), DOCX);
    expect(r.text).toBe('Outer text.\n\nInner memo: the plan holds.\n\nItem | Cost\nPaper | 12\n\nImported section text.\n\nClosing text.');
    expect(r.metadata.warnings).toEqual([
      'word/embeddings/Microsoft_Word_Document.docx: an embedded object (word/embeddings/deeper.xlsx) was not read: embedded documents are read one level deep',
      'an embedded object (word/embeddings/oleObject1.bin) was not read: only Word documents and Excel workbooks are',
    ]);
  });

  test('list numbers as displayed: 3) and a), restarts, roman, multi-level through a style', async () => {
    const r = await parser.parse(file('lists.docx', await numberingDocx()), DOCX);
    expect(r.text).toBe([
      'Steps:', '3) Open the valve\n  a) Slowly\n  b) Fully\n4) Close the lid',
      'Again:', '1) Restarted first\n2) Restarted second',
      'Continued:', '3) Continues the count',
      'Parts:', 'I. Scope\nII. Terms',
      '1. Definitions', '1.1. Meaning of words', '1.2. Headings', '2. Notices',
      '- A bullet',
      'Boxed:', 'III. In a box\nIV. Appendix',
    ].join('\n\n'));
  });
});

describe('PDF text as laid out', () => {
  test('a superscript stays on its line, letter-spaced words are words, a sticky note is read', async () => {
    const r = await parser.parse(file('layout.pdf', await pdfLayoutCases()), PDF);
    // Lines 30 points apart are paragraphs; the note follows the page's text.
    expect(r.pages![0]!.text).toBe('The 240th anniversary was marked.\n\nHere is spaced text\n\nA plain line.\n\nNote (Reviewer): Check the date with the archive.');
  });
});

describe('PDF CJK text through predefined CMaps', () => {
  test('Japanese, Chinese and Korean read through the shipped CMaps, also when a font names another collection', async () => {
    const r = await parser.parse(file('cjk.pdf', await cjkPdf()), PDF);
    // Before: the Chinese line (font claiming Adobe-Japan1) was 中文文本 → 奩滅滅Д mojibake, and the
    // katakana line (font claiming Adobe-Identity) was missing.
    expect(r.text).toBe('日本語のテキストです。\n中文文本，简体字。\nカタカナとひらがな\n한국어 텍스트\n北京欢迎你');
    expect(r.metadata.warnings).toEqual([]);
  });
});

describe('PDF metadata', () => {
  test('XMP title and every author are preferred to the Info dictionary', async () => {
    const r = await parser.parse(file('xmp.pdf', await xmpPdf()), PDF);
    expect(r.metadata).toMatchObject({
      title: 'Annual Report 2024 & Outlook',
      author: 'Ann Lee; Bo Chen; Chiara Rossi',
      authors: ['Ann Lee', 'Bo Chen', 'Chiara Rossi'],
      created_at: '2024-03-01T10:00:00.000Z',
    });
    expect(r.text).toBe('Body text.');
  });
});

describe('never a silent empty', () => {
  test('XLSX text boxes and chart titles are read when the cells are empty', async () => {
    const r = await parser.parse(file('textbox.xlsx', await textBoxWorkbook()), XLSX);
    expect(r.text).toBe('Quarterly sales\n\nSales & targets are confidential.');
    expect(r.metadata.no_text).toBeUndefined();
  });

  test('a PDF without a text layer completes with no_text and a warning that says why', async () => {
    const r = await parser.parse(file('scan.pdf', await imageOnlyPdf()), PDF);
    expect(r.text).toBe('');
    expect(r.metadata.no_text).toBe(true);
    expect(r.metadata.warnings[0]).toMatch(/^no text was extracted: the pages have no text layer/);
  });
});
