/**
 * What bench/parse.ts and bench/parse-service.ts share: the command-line sizes, the two generated
 * documents (an N-page PDF, an N-row XLSX) and the baseline — pdfjs / exceljs called directly in
 * this process, text only. pdfjs is loaded through keepBuiltins: its legacy build replaces the native
 * Array.prototype.push process-wide, which would slow every baseline measured after it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import ExcelJS from 'exceljs';
import { keepBuiltins } from '../src/infra/parsers/builtins.mjs';
import { pdfDocument, prose, writeLargeXlsx } from '../test/fixtures/documents';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};

export const sizes = { pages: arg('pages', 200), rows: arg('rows', 50_000), repeat: arg('repeat', 5) };

export const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;

export async function timed(run: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await run();
  return performance.now() - t;
}

/** Writes the two documents into a fresh temporary directory. */
export async function generateDocuments(prefix: string): Promise<{ dir: string; pdfPath: string; xlsxPath: string }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const pdfPath = join(dir, 'bench.pdf');
  const xlsxPath = join(dir, 'bench.xlsx');
  console.log(`generating a ${sizes.pages}-page PDF and a ${sizes.rows}-row XLSX…`);
  writeFileSync(pdfPath, await pdfDocument({ pages: Array.from({ length: sizes.pages }, (_, p) => Array.from({ length: 5 }, (_, i) => prose(p * 7 + i, 70))) }));
  await writeLargeXlsx(xlsxPath, sizes.rows);
  return { dir, pdfPath, xlsxPath };
}

/** The PDF baseline: every page's text items; throws when there is no text. */
export async function libraryPdf(path: string): Promise<number> {
  const pdfjs = await keepBuiltins(() => import('pdfjs-dist/legacy/build/pdf.mjs'));
  const doc = await pdfjs.getDocument({ url: pathToFileURL(path), isEvalSupported: false, verbosity: 0 }).promise;
  let chars = 0;
  for (let n = 1; n <= doc.numPages; n++) {
    const page = await doc.getPage(n);
    for (const item of (await page.getTextContent()).items) if ('str' in item) chars += item.str.length;
    page.cleanup();
  }
  await doc.destroy();
  if (chars === 0) throw new Error('no text');
  return chars;
}

/** The XLSX baseline: exceljs' streaming reader over every cell; throws when there are none. */
export async function libraryXlsx(path: string): Promise<number> {
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(path, { worksheets: 'emit', sharedStrings: 'cache', styles: 'cache', hyperlinks: 'ignore', entries: 'ignore' });
  let cells = 0;
  for await (const sheet of reader as unknown as AsyncIterable<AsyncIterable<{ eachCell(cb: (c: { value: unknown }) => void): void }>>) {
    for await (const row of sheet) row.eachCell((c) => { if (c.value !== null) cells++; });
  }
  if (cells === 0) throw new Error('no cells');
  return cells;
}
