/**
 * HTTP Range (RFC 9110 §14) for blob downloads: `bytes=a-b`, `bytes=a-`, `bytes=-n`, and several
 * of them separated by commas (answered as multipart/byteranges). A header in another unit or with
 * a malformed spec is ignored (the whole blob is sent, as the RFC allows); ranges that start past
 * the end are dropped, and when none is left the answer is 416. More than MAX_RANGES specs is
 * refused with 416 too: many small or overlapping ranges are a known amplification trick.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobRange } from '../../infra/blobstore';

export const MAX_RANGES = 16;

export type RangeRequest =
  | { kind: 'none' }
  | { kind: 'ranges'; ranges: BlobRange[] }
  | { kind: 'unsatisfiable' }
  | { kind: 'too_many'; count: number };

const SPEC = /^(\d*)-(\d*)$/;

export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (!header) return { kind: 'none' };
  const m = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!m) return { kind: 'none' };
  const specs = m[1]!.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (specs.length === 0) return { kind: 'none' };
  if (specs.length > MAX_RANGES) return { kind: 'too_many', count: specs.length };
  const ranges: BlobRange[] = [];
  // Digits past 2^53 stay valid syntax (RFC 9110 §14.1.1): read them as "beyond any blob".
  const num = (d: string) => { const n = Number(d); return Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER; };
  let emptySuffix = false;
  for (const spec of specs) {
    const s = SPEC.exec(spec);
    if (!s || (s[1] === '' && s[2] === '')) return { kind: 'none' };
    if (s[1] === '') {
      const n = num(s[2]!);
      if (n > 0 && size > 0) ranges.push({ start: Math.max(0, size - n), end: size - 1 });
      if (n > 0 && size === 0) emptySuffix = true;
      continue;
    }
    const start = num(s[1]!);
    const end = s[2] === '' ? Number.MAX_SAFE_INTEGER : num(s[2]!);
    if (end < start) return { kind: 'none' };
    if (start < size) ranges.push({ start, end: Math.min(end, size - 1) });
  }
  // A non-zero suffix is satisfiable even on an empty blob, but no 206 can express it: send it whole.
  if (ranges.length === 0 && emptySuffix) return { kind: 'none' };
  return ranges.length === 0 ? { kind: 'unsatisfiable' } : { kind: 'ranges', ranges };
}

export interface Multipart {
  contentType: string;
  contentLength: number;
  body: Readable;
}

/** multipart/byteranges body streaming each range in turn from `read`; Content-Length computed up front. */
export function multipartRanges(
  ranges: BlobRange[], size: number, partType: string, read: (r: BlobRange) => Promise<Readable>,
): Multipart {
  const boundary = `svc_${randomBytes(12).toString('hex')}`;
  const heads = ranges.map((r, i) =>
    `${i === 0 ? '' : '\r\n'}--${boundary}\r\nContent-Type: ${partType}\r\nContent-Range: bytes ${r.start}-${r.end}/${size}\r\n\r\n`);
  const tail = `\r\n--${boundary}--\r\n`;
  const contentLength = heads.reduce((n, h) => n + Buffer.byteLength(h), 0)
    + ranges.reduce((n, r) => n + (r.end - r.start + 1), 0) + Buffer.byteLength(tail);
  const out = new PassThrough();
  void (async () => {
    try {
      for (let i = 0; i < ranges.length; i++) {
        if (!out.write(heads[i])) await new Promise((r) => out.once('drain', r));
        await pipeline(await read(ranges[i]!), out, { end: false });
      }
      out.end(tail);
    } catch (e) {
      out.destroy(e as Error);
    }
  })();
  return { contentType: `multipart/byteranges; boundary=${boundary}`, contentLength, body: out };
}
