/**
 * Text PostgreSQL cannot store, arriving where the input guard (src/http/input-guard.ts, which
 * refuses NUL and lone surrogates in JSON, query and path text) does not look: documents. Extracted
 * text is third-party content, so the parser drops NUL and turns a lone surrogate into U+FFFD
 * (src/infra/parsers/storable.ts) instead of refusing the file. Before, the parse's chunks (stored
 * as plain text) made PostgreSQL refuse the insert (a 500) while SQLite kept the NUL, and a lone
 * surrogate was stored as one U+FFFD on PostgreSQL, three on SQLite, and answered as `\ud800`.
 * Runs in the sqlite and postgres projects; both must answer alike.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import JSZip from 'jszip';
import { PDFDocument, PDFHexString, PDFName, PDFNumber, PDFOperator, PDFOperatorNames as Op, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { docxDocument, writeZip } from './fixtures/documents';
import { eventually, startBlobApp, type BlobApp } from './blobs-support';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const UNSTORABLE = /\u0000|\p{Cs}/u;

let w: BlobApp;
let a: { token: string; id: string };
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-pg-text-'));
  w = await startBlobApp('fs', { SVC_PARSE_SYNC_MAX_BYTES: '2000000' });
  a = await w.agent('deploy'); // no per-minute parse limit in the way
}, 60_000);
afterAll(async () => {
  await w?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A real DOCX (docx library) with its XML parts edited. */
async function editedDocx(edit: (name: string, xml: string) => string): Promise<Buffer> {
  const zip = await JSZip.loadAsync(await docxDocument());
  for (const name of Object.keys(zip.files).filter((n) => n.endsWith('.xml'))) {
    const xml = await zip.file(name)!.async('string');
    zip.file(name, edit(name, xml));
  }
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

async function upload(bytes: Buffer, type: string): Promise<string> {
  const up = await w.upload(a.token, bytes, type);
  expect([200, 201]).toContain(up.status);
  return up.body.blob_id as string;
}

const parse = (id: string, q = '') => w.request('POST', `/v1/blobs/${id}/parse${q}`, { token: a.token });

/** Every string (keys too) in a JSON value. */
function strings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (v === null || typeof v !== 'object') return [];
  return Object.entries(v).flatMap(([k, x]) => [k, ...strings(x)]);
}

/** The chunk texts the store holds for a blob, in order. */
async function storedChunks(blobId: string): Promise<string[]> {
  const rows = await w.built.database.db.selectFrom('blob_chunks').select(['chunk_index', 'text'])
    .where('agent_id', '=', a.id).where('blob_id', '=', blobId).orderBy('chunk_index').execute();
  return rows.map((r) => r.text);
}

/** A complete parse whose text, views and chunks hold nothing unstorable, and whose stored chunks are the answered ones. */
async function expectStorable(blobId: string, r: { status: number; body: any }) {
  expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
  expect(r.body.status).toBe('complete');
  expect(strings(r.body.result).filter((t) => UNSTORABLE.test(t))).toEqual([]);
  expect(await storedChunks(blobId)).toEqual(r.body.result.chunks.map((c: { text: string }) => c.text));
  const again = await w.request('GET', `/v1/blobs/${blobId}/parse/${r.body.parse_id}`, { token: a.token });
  expect(again.body.result).toEqual(r.body.result);
}

describe('DOCX: NUL in the document XML', () => {
  test('&#0; and a raw NUL byte in a paragraph, a heading and a table cell, &#0; and &#xD800; in the title: dropped / U+FFFD, a complete parse on both engines', async () => {
    const bytes = await editedDocx((name, xml) => (name === 'docProps/core.xml'
      ? xml.replace('>Quarterly Report<', '>Quarterly&#0; Report&#xD800;<')
      : xml.replace('Costs stayed flat', 'Costs&#0; stayed\u0000 flat').replace('>North<', '>No&#0;rth<').replace('>Regional figures<', '>Regional&#0; figures<')));
    const id = await upload(bytes, DOCX);
    const r = await parse(id);
    // Before: PostgreSQL answered 500 INTERNAL_ERROR (the chunk insert failed); SQLite stored the NULs.
    await expectStorable(id, r);
    expect(r.body.result.text).toContain('Costs stayed flat, which the board noted with approval.');
    expect(r.body.result.tables[0].rows[1]).toEqual(['North', '1200', '12%']);
    expect(r.body.result.chunks.some((c: any) => c.location.heading === 'Regional figures')).toBe(true);
    expect(r.body.result.metadata.title).toBe('Quarterly Report\ufffd');
  });

  test('an async parse of the same kind of file completes (it was retried until its attempts ran out on PostgreSQL)', async () => {
    const bytes = await editedDocx((name, xml) => xml.replace('Figures are in thousands', 'Figures&#0; are in thousands'));
    const id = await upload(bytes, DOCX);
    const q = await parse(id, '?async=true');
    expect(q.status).toBe(202);
    const done = await eventually(async () => {
      const s = await w.request('GET', `/v1/blobs/${id}/parse/${q.body.parse_id}`, { token: a.token });
      return s.body.status === 'complete' || s.body.status === 'failed' ? s : undefined;
    }, 15_000, 'async parse');
    await expectStorable(id, done);
    expect(done.body.result.text).toContain('Figures are in thousands of euros.');
  });
});

describe('PDF: a glyph of code 0', () => {
  test('pdfjs reads it as NUL: dropped, a complete parse on both engines', async () => {
    const doc = await PDFDocument.create();
    const font = await doc.embedFont(StandardFonts.Helvetica);
    const page = doc.addPage([612, 792]);
    page.drawText('Hello there', { x: 50, y: 700, size: 12, font });
    const [name] = page.node.normalizedEntries().Font.entries()[0]! as [PDFName, unknown];
    // (A\0B\0C) shown in the page's Helvetica: WinAnsi has no character for code 0.
    page.pushOperators(
      PDFOperator.of(Op.BeginText), PDFOperator.of(Op.SetFontAndSize, [name, PDFNumber.of(12)]), PDFOperator.of(Op.MoveText, [PDFNumber.of(50), PDFNumber.of(600)]),
      PDFOperator.of(Op.ShowText, [PDFHexString.of('4100420043')]), PDFOperator.of(Op.EndText),
    );
    const id = await upload(Buffer.from(await doc.save()), 'application/pdf');
    const r = await parse(id);
    await expectStorable(id, r); // before: 500 on PostgreSQL; "A\u0000B\u0000C" stored on SQLite
    expect(r.body.result.text).toBe('Hello there\n\nABC');
    expect(r.body.result.pages).toEqual([{ number: 1, text: 'Hello there\n\nABC' }]);
  });
});

describe('CSV: NUL the binary sniff does not see, lone surrogates', () => {
  const cases: [string, Buffer, string][] = [
    // The sniff reads the first 64 KiB of a UTF-8 file only.
    ['UTF-8, NUL after the first 64 KiB', Buffer.from(`x,y\n${'aaaa,bbbb\n'.repeat(7000)}c\u0000d,e\n`), 'text/csv'],
    // Latin-1 and UTF-16 files are not sniffed at all.
    ['ISO-8859-1', Buffer.from('x,y\nc\u0000d,e\n', 'latin1'), 'text/csv; charset=iso-8859-1'],
    ['UTF-16LE with a BOM', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('x,y\nc\u0000d,e\n', 'utf16le')]), 'text/csv'],
  ];
  for (const [label, bytes, type] of cases) {
    test(`${label}: the NUL is dropped, a complete parse on both engines`, async () => {
      const id = await upload(bytes, type);
      const r = await parse(id);
      await expectStorable(id, r); // before: 500 on PostgreSQL, NUL stored on SQLite
      expect(r.body.result.rows.at(-1)).toEqual(['cd', 'e']);
    });
  }

  test('UTF-16LE with a lone surrogate: U+FFFD in the result and in the stored chunks alike', async () => {
    const id = await upload(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('x,y\nc\ud800d,e\n', 'utf16le')]), 'text/csv');
    const r = await parse(id);
    // Before: the result answered "c\ud800d"; the chunk was stored as "c\ufffdd" on PostgreSQL and
    // "c\ufffd\ufffd\ufffdd" on SQLite (its UTF-8 bytes ED A0 80 read back one by one).
    await expectStorable(id, r);
    expect(r.body.result.rows).toEqual([['c\ufffdd', 'e']]);
    expect(await storedChunks(id)).toEqual(['x | y\nc\ufffdd | e']);
  });
});

describe('failure messages quoting the file', () => {
  test('a ZIP entry name with a NUL in the message of a failed parse: stored without it on both engines', async () => {
    const path = join(dir, 'dup.docx');
    await writeZip(path, [{ name: 'word/a\u0000b.xml', data: Buffer.from('x') }, { name: 'word/a\u0000b.xml', data: Buffer.from('x') }]);
    const id = await upload(readFileSync(path), DOCX);
    const r = await parse(id);
    // Before: 500 on PostgreSQL (the failed parse's insert), the NUL stored and answered on SQLite.
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    expect(r.body).toMatchObject({ status: 'failed', error: 'DOCX: duplicate ZIP entry word/ab.xml' });
    const again = await w.request('GET', `/v1/blobs/${id}/parse/${r.body.parse_id}`, { token: a.token });
    expect(again.body).toMatchObject({ status: 'failed', error: 'DOCX: duplicate ZIP entry word/ab.xml' });
  });
});

describe('agent-supplied text: refused alike on both engines (input guard)', () => {
  // The guard refused a NUL (or lone surrogate) with the route's code for the field even when that
  // code is kept for one schema keyword: a NUL in registration_source was REGISTRATION_SOURCE_TOO_LONG
  // (its code for maxLength only; a wrong type is VALIDATION_FAILED).
  test('a NUL in registration_source is 422 VALIDATION_FAILED, not REGISTRATION_SOURCE_TOO_LONG', async () => {
    const r = await w.request('POST', '/v1/register', { body: { agent_name: 'nul-source', owner_identifier: 'o', agree_to_terms: true, registration_source: 'a\u0000b' } });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ error_code: 'VALIDATION_FAILED', field: 'body.registration_source' });
  });
});
