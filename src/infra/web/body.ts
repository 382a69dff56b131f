/**
 * Reads a response body into memory with a hard cap on the DECODED size (so a small gzip bomb
 * cannot expand past the cap), aborting the transfer as soon as the cap is passed.
 */
import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { WebError } from './errors';

export type OversizePolicy = 'error' | 'truncate';

/**
 * Bytes shared by several fetches (a dynamic render's sub-requests, read at the same time): each
 * chunk read draws on it as it arrives, so the total holds however many answers are in flight.
 */
export interface ByteBudget {
  readonly left: number;
  /** Draws `n` bytes; false (and nothing drawn) when fewer are left. */
  take(n: number): boolean;
}

export function createByteBudget(total: number): ByteBudget {
  let left = total;
  return {
    get left() {
      return left;
    },
    take(n) {
      if (n > left) return false;
      left -= n;
      return true;
    },
  };
}

function decoderFor(encoding: string | undefined): NodeJS.ReadWriteStream | null {
  const enc = (encoding ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return null;
  if (enc === 'gzip' || enc === 'x-gzip') return createGunzip();
  if (enc === 'deflate') return createInflate();
  if (enc === 'br') return createBrotliDecompress();
  throw new WebError('BROWSE_PROVIDER_ERROR', 'unsupported_content_encoding', `Unsupported content-encoding "${enc}".`);
}

export async function readCapped(
  raw: Readable,
  contentEncoding: string | undefined,
  maxBytes: number,
  onOversize: OversizePolicy,
  budget?: ByteBudget,
): Promise<{ body: Buffer; truncated: boolean }> {
  // Destroying an undici body emits an abort error; we destroy on purpose past the cap.
  raw.on('error', () => {});
  let decoder: NodeJS.ReadWriteStream | null;
  try {
    decoder = decoderFor(contentEncoding);
  } catch (err) {
    raw.destroy();
    throw err;
  }
  const source: AsyncIterable<Buffer> & { destroy(): void } = decoder
    ? (pipeline(raw, decoder, () => {}) as unknown as AsyncIterable<Buffer> & { destroy(): void })
    : (raw as AsyncIterable<Buffer> & { destroy(): void });
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of source) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      if (size + buf.length > maxBytes) {
        if (onOversize === 'truncate') {
          chunks.push(buf.subarray(0, maxBytes - size));
          size = maxBytes;
          source.destroy();
          raw.destroy();
          return { body: Buffer.concat(chunks, size), truncated: true };
        }
        source.destroy();
        raw.destroy();
        throw new WebError('BROWSE_RESPONSE_TOO_LARGE', 'too_large', `Response body exceeds ${maxBytes} bytes.`);
      }
      if (budget && !budget.take(buf.length)) {
        source.destroy();
        raw.destroy();
        throw new WebError('BROWSE_RESPONSE_TOO_LARGE', 'too_large', 'The byte budget shared by this fetch and others ran out.');
      }
      chunks.push(buf);
      size += buf.length;
    }
  } catch (err) {
    raw.destroy();
    // Decoder and socket errors are mapped by the client (it knows whether time ran out).
    throw err;
  }
  return { body: Buffer.concat(chunks, size), truncated: false };
}
