import type { Readable } from 'node:stream';

/** Inclusive byte range, as in HTTP `Range: bytes=start-end`. */
export interface BlobRange {
  start: number;
  end: number;
}

/** Bytes written to a staging file and hashed, not yet visible under their content address. */
export interface StagedBlob {
  /** Lower-case hex SHA-256 of the bytes. */
  readonly sha256: string;
  readonly sizeBytes: number;
  /** Moves the bytes to their content-addressed place; succeeds (and drops the staged copy) when they are already there. Idempotent. */
  commit(): Promise<void>;
  /** Drops the staged bytes. Idempotent; a no-op after commit. */
  discard(): Promise<void>;
}

/**
 * Content-addressed byte storage. Keys are SHA-256 hex digests; every operation streams, so no
 * blob is ever held in memory whole. Ownership, soft-deletes and reference counting belong to the
 * blobs module; this layer only stores bytes.
 */
export interface BlobStore {
  /** Streams `body` to a staging location while hashing (sha256) and counting bytes; rejects with BlobTooLargeError past maxBytes (and cleans up). */
  stage(body: Readable, maxBytes: number): Promise<StagedBlob>;
  exists(sha256: string): Promise<boolean>;
  /** Rejects with BlobNotFoundError, or BlobRangeError when the range is outside the blob. */
  read(sha256: string, range?: BlobRange): Promise<Readable>;
  size(sha256: string): Promise<number | undefined>;
  /** Idempotent. */
  delete(sha256: string): Promise<void>;
  /** Runs `fn` with a local path holding the bytes (read-only for `fn`); any temporary copy is removed afterwards. */
  withLocalFile<T>(sha256: string, fn: (path: string) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export class BlobStoreError extends Error {
  constructor(public readonly code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The body went past the allowed size; nothing was kept. */
export class BlobTooLargeError extends BlobStoreError {
  constructor(public readonly maxBytes: number) {
    super('BLOB_TOO_LARGE', `blob exceeds the maximum of ${maxBytes} bytes`);
  }
}

export class BlobNotFoundError extends BlobStoreError {
  constructor(sha256: string) {
    super('BLOB_NOT_FOUND', `no stored blob ${sha256}`);
  }
}

/** The requested range does not lie inside the blob (HTTP 416). */
export class BlobRangeError extends BlobStoreError {
  constructor(public readonly range: BlobRange, public readonly sizeBytes: number) {
    super('RANGE_NOT_SATISFIABLE', `range ${range.start}-${range.end} is outside a blob of ${sizeBytes} bytes`);
  }
}

/** A key that is not a SHA-256 hex digest: a programming error upstream, never a path to follow. */
export class InvalidBlobKeyError extends BlobStoreError {
  constructor(key: string) {
    super('INVALID_BLOB_KEY', `not a sha256 hex digest: ${JSON.stringify(key.slice(0, 80))}`);
  }
}

/** The backend is misconfigured or unreachable (bad bucket, credentials, disk). */
export class BlobStoreUnavailableError extends BlobStoreError {
  /** How a route answers it (http/errors.ts): 503, with a message that names no endpoint or bucket. */
  readonly publicStatus = 503;
  readonly publicMessage = 'The blob store cannot be reached right now; try again shortly';
  constructor(message: string, options?: ErrorOptions) {
    super('BLOB_STORE_UNAVAILABLE', message, options);
  }
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

export function assertSha256(key: string): void {
  if (typeof key !== 'string' || !SHA256_HEX.test(key)) throw new InvalidBlobKeyError(String(key));
}

/** Checks an inclusive range against a size; throws BlobRangeError when it does not fit. */
export function checkRange(range: BlobRange, sizeBytes: number): void {
  const { start, end } = range;
  const ok = Number.isSafeInteger(start) && Number.isSafeInteger(end) && start >= 0 && start <= end && end < sizeBytes;
  if (!ok) throw new BlobRangeError(range, sizeBytes);
}
