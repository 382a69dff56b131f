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
import { entryOrder, rezip } from '../../../test/fixtures/fidelity';

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

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
