/**
 * Blob bytes in and out, streamed, with progress: an upload is sent as multipart/form-data (the file
 * name is kept) from a file or bytes without reading a file into memory; a download streams to a
 * file (or any writable) and checks the bytes against the blob's SHA-256 (its ETag).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ok, SvcError, SvcProtocolError, type JsonBody, type SvcClient } from './client';

/** Bytes done and the total (undefined when unknown). */
export type Progress = (done: number, total: number | undefined) => void;

/** svc's answer to the upload, and whether the blob is new (201) or the agent already had these bytes (200). */
export type UploadedBlob = JsonBody<'/v1/blobs', 'put', 201> & { created: boolean };

export interface UploadInput {
  /** A file to upload (streamed). */
  path?: string;
  /** Or the bytes. */
  data?: Uint8Array;
  /** The file name svc keeps (default: the path's base name; none for bytes). */
  filename?: string;
  /** The media type (default: guessed from the file name's extension, else application/octet-stream). */
  contentType?: string;
  onProgress?: Progress;
  signal?: AbortSignal;
}

const TYPES: Record<string, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  csv: 'text/csv', tsv: 'text/tab-separated-values', txt: 'text/plain', md: 'text/markdown',
  json: 'application/json', html: 'text/html', htm: 'text/html', xml: 'application/xml',
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml',
  zip: 'application/zip', gz: 'application/gzip',
};

/** The media type for a file name by its extension (the types svc parses, and common ones). */
export function contentTypeFor(filename: string | undefined): string {
  const ext = filename?.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1];
  return (ext && TYPES[ext]) || 'application/octet-stream';
}

// The file name as a quoted string: quote and backslash escaped with a backslash (svc's multipart
// parser reads them back exactly), CR and LF percent-encoded, other characters, non-ASCII included,
// as UTF-8. svc keeps only the part after the last / or \ (it reads a name as a path).
const quoted = (s: string) => `"${s.replace(/[\\"]/g, '\\$&').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`;

/** Uploads a blob (PUT /v1/blobs). `created` is false when the agent already had these bytes. */
export async function uploadBlob(client: SvcClient, input: UploadInput): Promise<UploadedBlob> {
  if ((input.path === undefined) === (input.data === undefined)) throw new TypeError('give either path or data');
  const filename = input.filename ?? (input.path !== undefined ? basename(input.path) : undefined);
  const contentType = input.contentType ?? contentTypeFor(filename);
  if (/[\r\n]/.test(contentType)) throw new TypeError('contentType has a line break');
  const size = input.path !== undefined ? statSync(input.path).size : input.data!.byteLength;
  const boundary = `svc-sdk-${randomBytes(12).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"${filename !== undefined ? `; filename=${quoted(filename)}` : ''}\r\n`
    + `Content-Type: ${contentType}\r\n\r\n`, 'utf8');
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  let sent = 0;
  input.onProgress?.(0, size);
  async function* body(): AsyncGenerator<Uint8Array> {
    yield head;
    const source = input.path !== undefined ? createReadStream(input.path, { highWaterMark: 256 * 1024 }) : [input.data!];
    for await (const chunk of source as AsyncIterable<Uint8Array>) {
      yield chunk;
      sent += chunk.byteLength;
      input.onProgress?.(sent, size);
    }
    yield tail;
  }
  const res = await client.PUT('/v1/blobs', {
    // A streamed body: openapi-fetch hands it to fetch as it is.
    body: Readable.toWeb(Readable.from(body())) as unknown as string,
    bodySerializer: (b: unknown) => b,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    duplex: 'half',
    signal: input.signal,
  });
  const blob = await ok(res);
  return { ...blob, created: res.response.status === 201 };
}

export interface DownloadedBlob {
  /** Bytes written. */
  bytes: number;
  contentType: string | null;
  /** The file name svc kept (from Content-Disposition), or null. */
  filename: string | null;
  sha256: string;
  /** Where the bytes went, when downloaded to a file. */
  path?: string;
}

/** The file name of a Content-Disposition header (filename* first), or null. */
export function dispositionFilename(header: string | null): string | null {
  if (!header) return null;
  const star = header.match(/filename\*\s*=\s*UTF-8''([^;]+)/i);
  if (star) {
    try {
      return decodeURIComponent(star[1].trim());
    } catch {
      /* fall back to filename */
    }
  }
  const plain = header.match(/filename\s*=\s*"((?:[^"\\]|\\.)*)"/i) ?? header.match(/filename\s*=\s*([^;\s]+)/i);
  return plain ? plain[1].replace(/\\(.)/g, '$1') : null;
}

/** A name safe to create in a directory: the last path segment, without control characters; null if nothing is left. */
export function safeFilename(name: string | null): string | null {
  if (!name) return null;
  const base = basename(name.replace(/\\/g, '/')).replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return base && base !== '.' && base !== '..' ? base : null;
}

export interface DownloadOptions {
  onProgress?: Progress;
  signal?: AbortSignal;
}

/**
 * Streams a blob (GET /v1/blobs/{blob_id}) into `to`: a file path (written to a temporary name
 * beside it and renamed once complete and checked) or a writable stream. Throws SvcProtocolError,
 * and leaves no file, when the bytes do not match the blob's SHA-256.
 */
export async function downloadBlob(client: SvcClient, blobId: string, to: string | NodeJS.WritableStream, opts: DownloadOptions = {}): Promise<DownloadedBlob> {
  const res = await client.GET('/v1/blobs/{blob_id}', { params: { path: { blob_id: blobId } }, parseAs: 'stream', signal: opts.signal });
  if (!res.response.ok) throw new SvcError(res.response.status, res.error);
  const headers = res.response.headers;
  const lengthHeader = headers.get('content-length');
  const total = lengthHeader !== null ? Number(lengthHeader) : undefined;
  const etag = headers.get('etag')?.replace(/^W\//, '').replace(/"/g, '') ?? null;
  const hash = createHash('sha256');
  let bytes = 0;
  opts.onProgress?.(0, total);
  const counter = async function* (source: AsyncIterable<Uint8Array>) {
    for await (const chunk of source) {
      hash.update(chunk);
      bytes += chunk.byteLength;
      opts.onProgress?.(bytes, total);
      yield chunk;
    }
  };
  const stream = res.data ? Readable.fromWeb(res.data as import('node:stream/web').ReadableStream<Uint8Array>) : Readable.from([]);
  const out = { bytes: 0, contentType: headers.get('content-type'), filename: dispositionFilename(headers.get('content-disposition')), sha256: '' };
  if (typeof to === 'string') {
    const temp = join(dirname(to), `.${basename(to)}.${randomBytes(4).toString('hex')}.part`);
    try {
      await pipeline(stream, counter, createWriteStream(temp, { flags: 'wx' }));
      out.sha256 = hash.digest('hex');
      if (etag && etag !== out.sha256) throw new SvcProtocolError(`the bytes of ${blobId} do not match its SHA-256 ${etag}`);
      await rename(temp, to);
    } catch (e) {
      await rm(temp, { force: true });
      throw e;
    }
    return { ...out, bytes, path: to };
  }
  await pipeline(stream, counter, to as Writable, { end: to !== process.stdout });
  out.sha256 = hash.digest('hex');
  if (etag && etag !== out.sha256) throw new SvcProtocolError(`the bytes of ${blobId} do not match its SHA-256 ${etag}`);
  return { ...out, bytes };
}
