/**
 * Content-Type → parser kind (the stored Content-Type decides), and a look at the
 * first bytes so a file whose content does not match its type fails with a message saying what it
 * looks like instead of a library's stack trace.
 */
import type { ParseKind } from './types';

const byMime: Record<string, ParseKind> = {
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-word.document.macroenabled.12': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.ms-excel.sheet.macroenabled.12': 'xlsx',
  'text/csv': 'csv',
  'application/csv': 'csv',
  'text/x-csv': 'csv',
  'application/x-csv': 'csv',
  'text/comma-separated-values': 'csv',
  'text/tab-separated-values': 'csv',
};

/** The media type without parameters, lower-cased: `Text/CSV; charset=utf-8` → `text/csv`. */
export function mediaType(contentType: string): string {
  return contentType.split(';', 1)[0]!.trim().toLowerCase();
}

/** The `charset` parameter of a Content-Type, lower-cased, if any. */
export function charsetOf(contentType: string): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
  return m ? m[1]!.toLowerCase() : undefined;
}

export function detectParseKind(contentType: string | undefined | null): ParseKind | undefined {
  if (!contentType) return undefined;
  return byMime[mediaType(contentType)];
}

const signatures: [string, (b: Uint8Array) => boolean][] = [
  ['a PDF document', (b) => indexOf(b, '%PDF-', 1024) >= 0],
  ['a ZIP archive', (b) => b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04],
  ['a PNG image', (b) => b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47],
  ['a JPEG image', (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  ['a GIF image', (b) => startsWith(b, 'GIF8')],
  ['a gzip file', (b) => b[0] === 0x1f && b[1] === 0x8b],
  ['an OLE compound file (legacy .doc/.xls or an encrypted Office file)', (b) => startsWith(b, '\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1')],
  ['an HTML page', (b) => /^\s*<(!doctype html|html)/i.test(latin1(b.subarray(0, 64)))],
];

/** A short description of what the first bytes look like, for mismatch messages. */
export function describeBytes(head: Uint8Array): string {
  if (head.length === 0) return 'an empty file';
  for (const [name, test] of signatures) if (test(head)) return name;
  return looksBinary(head) ? 'binary data' : 'plain text';
}

/** NUL bytes or many control characters in the sample mean this is not text. */
export function looksBinary(sample: Uint8Array): boolean {
  if (sample.length === 0) return false;
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return true;
    if (byte < 0x09 || (byte > 0x0d && byte < 0x20) || byte === 0x7f) control++;
  }
  return control / sample.length > 0.05;
}

export function startsWith(b: Uint8Array, text: string): boolean {
  if (b.length < text.length) return false;
  for (let i = 0; i < text.length; i++) if (b[i] !== text.charCodeAt(i)) return false;
  return true;
}

export function indexOf(b: Uint8Array, text: string, within: number): number {
  const end = Math.min(b.length, within) - text.length;
  outer: for (let i = 0; i <= end; i++) {
    for (let j = 0; j < text.length; j++) if (b[i + j] !== text.charCodeAt(j)) continue outer;
    return i;
  }
  return -1;
}

function latin1(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
}
