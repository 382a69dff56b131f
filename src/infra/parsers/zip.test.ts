import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { inspectZip } from './zip';
import { ParseFailure } from './errors';
import { docxDocument, writeZip, xlsxWorkbook, zipBomb, zipEntries } from '../../../test/fixtures/documents';

const dir = mkdtempSync(join(tmpdir(), 'svc-zip-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const limits = { maxUnzippedBytes: 64 * 1024 * 1024, maxZipEntries: 100 };
const GiB = 1024 * 1024 * 1024;

async function failure(promise: Promise<unknown>): Promise<ParseFailure> {
  const e = await promise.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(ParseFailure);
  return e as ParseFailure;
}

describe('inspectZip', () => {
  test('accepts real DOCX and XLSX packages and reads small entries', async () => {
    for (const [name, bytes] of [['ok.docx', await docxDocument()], ['ok.xlsx', await xlsxWorkbook()]] as const) {
      const path = join(dir, name);
      writeFileSync(path, bytes);
      const zip = await inspectZip(path, limits);
      expect(zip.entries.has('[Content_Types].xml')).toBe(true);
      expect(await zip.readText('[Content_Types].xml')).toContain('<Types');
      expect(await zip.readText('no/such/entry')).toBeUndefined();
    }
  });

  test('a bomb with honest sizes is refused from its directory, without inflating', async () => {
    const path = join(dir, 'bomb.docx');
    await zipBomb(path, 'docx', GiB);
    const started = performance.now();
    const e = await failure(inspectZip(path, limits, 'DOCX'));
    expect(e.reason).toBe('too_large');
    expect(e.message).toMatch(/DOCX would inflate to 10\d\d(\.\d)? MiB \(limit 64 MiB\); refusing a possible zip bomb/);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  test('a bomb that lies about its size is stopped while inflating, just past the declared size', async () => {
    const path = join(dir, 'liar.xlsx');
    await zipBomb(path, 'xlsx', GiB, true);
    const started = performance.now();
    const e = await failure(inspectZip(path, limits, 'XLSX'));
    expect(e.reason).toBe('corrupt');
    expect(e.message).toMatch(/XLSX: ZIP entry xl\/sharedStrings\.xml declares \d+ bytes but inflates to more; refusing a possible zip bomb/);
    // Inflating the whole GiB would take seconds; stopping early takes milliseconds.
    expect(performance.now() - started).toBeLessThan(2000);
  });

  test('an entry hidden from the central directory is refused', async () => {
    const entries = await zipEntries(await docxDocument());
    const path = join(dir, 'hidden.docx');
    await writeZip(path, [...entries, { name: 'xl/sharedStrings.xml', data: Buffer.from('<sst/>'), hidden: true }]);
    const e = await failure(inspectZip(path, limits));
    expect(e.reason).toBe('corrupt');
    expect(e.message).toMatch(/unlisted data .*hidden entries are refused/);
  });

  test('too many entries', async () => {
    const path = join(dir, 'many.zip');
    await writeZip(path, Array.from({ length: 150 }, (_, i) => ({ name: `f${i}.txt`, data: Buffer.from('x') })));
    const e = await failure(inspectZip(path, limits));
    expect(e.reason).toBe('too_large');
    expect(e.message).toMatch(/150 ZIP entries \(limit 100\)/);
  });

  test('not a ZIP at all, and a truncated ZIP', async () => {
    const path = join(dir, 'text.zip');
    writeFileSync(path, 'just some text, certainly not a zip archive');
    expect((await failure(inspectZip(path, limits))).message).toMatch(/not a ZIP container/);
    const truncated = join(dir, 'truncated.docx');
    const full = await docxDocument();
    writeFileSync(truncated, full.subarray(0, Math.floor(full.length / 2)));
    expect((await failure(inspectZip(truncated, limits))).reason).toBe('corrupt');
  });
});
