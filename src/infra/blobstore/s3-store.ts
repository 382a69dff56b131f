/**
 * S3-compatible BlobStore (AWS S3, MinIO, Ceph, R2, s3rver...).
 *
 * Uploads are staged to a local temp file first: the object key is the content hash, which is
 * only known once every byte has been seen. Commit then skips the upload when an object of the
 * same size already sits at that key (content addressing makes that a duplicate), otherwise it
 * sends one PutObject (small) or a multipart upload whose parts are read straight from the file
 * (large). Bodies are file streams with a known length, so nothing is buffered in memory.
 *
 * The SDK does not retry requests with a streaming body, so uploads retry here with a fresh file
 * stream. SDK "flexible checksums" are set to WHEN_REQUIRED because several S3-compatible servers
 * (s3rver, older MinIO/Ceph) mishandle aws-chunked trailers; PutObject instead carries our own
 * SHA-256 (x-amz-checksum-sha256), which AWS verifies against the key.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock, type Clock } from '../../lib/clock';
import { downloadPath, pipeToNewFile, StagedFileBlob, stageToFile, startStagingSweeper, STAGING_SWEEP_MS, sweepStaging, type StagedFile } from './staging';
import {
  assertSha256,
  BlobNotFoundError,
  BlobRangeError,
  BlobStoreError,
  BlobStoreUnavailableError,
  checkRange,
  type BlobRange,
  type BlobStore,
  type StagedBlob,
} from './types';

const MiB = 1024 * 1024;
const MAX_PARTS = 10_000; // S3's limit per multipart upload

export interface S3ClientSettings {
  endpoint?: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
}

export function createS3Client(s: S3ClientSettings): S3Client {
  return new S3Client({
    endpoint: s.endpoint,
    region: s.region,
    forcePathStyle: s.forcePathStyle,
    credentials: s.accessKeyId && s.secretAccessKey ? { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey } : undefined,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /** Key prefix; objects live at `<prefix><sha256>`. */
  prefix: string;
  /** Local directory for staging files and withLocalFile downloads (created when missing). Use a disk, not tmpfs. */
  stagingDir: string;
  /** Objects larger than this use multipart upload. Default 16 MiB. */
  multipartThresholdBytes?: number;
  /** Part size for multipart uploads (S3 needs >= 5 MiB except the last). Default 16 MiB. */
  partSizeBytes?: number;
  /** Parts uploaded at once. Default 4. */
  partConcurrency?: number;
  /** Attempts per upload request (PutObject, each part). Default 3. */
  uploadAttempts?: number;
  clock?: Clock;
}

export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly stagingDir: string;
  private stopSweeper: () => void = () => {};
  private readonly threshold: number;
  private readonly partSize: number;
  private readonly partConcurrency: number;
  private readonly attempts: number;

  private constructor(o: S3BlobStoreOptions) {
    this.client = o.client;
    this.bucket = o.bucket;
    this.prefix = normalisePrefix(o.prefix);
    this.stagingDir = o.stagingDir;
    this.partSize = o.partSizeBytes ?? 16 * MiB;
    this.threshold = o.multipartThresholdBytes ?? this.partSize;
    this.partConcurrency = o.partConcurrency ?? 4;
    this.attempts = o.uploadAttempts ?? 3;
  }

  static async open(o: S3BlobStoreOptions): Promise<S3BlobStore> {
    await mkdir(o.stagingDir, { recursive: true });
    await sweepStaging(o.stagingDir, 86_400_000, o.clock ?? systemClock);
    const store = new S3BlobStore(o);
    store.stopSweeper = startStagingSweeper(o.stagingDir, STAGING_SWEEP_MS, 86_400_000, o.clock ?? systemClock);
    return store;
  }

  keyFor(sha256: string): string {
    assertSha256(sha256);
    return this.prefix + sha256;
  }

  async stage(body: Readable, maxBytes: number): Promise<StagedBlob> {
    const file = await stageToFile(body, this.stagingDir, maxBytes, { fsync: false });
    return new StagedFileBlob(file, () => this.upload(file));
  }

  private async upload(file: StagedFile): Promise<void> {
    if ((await this.size(file.sha256)) !== file.sizeBytes) {
      if (file.sizeBytes > this.threshold) await this.uploadMultipart(file);
      else await this.uploadSingle(file);
    }
    await rm(file.path, { force: true });
  }

  private async uploadSingle(file: StagedFile): Promise<void> {
    const Key = this.keyFor(file.sha256);
    const ChecksumSHA256 = Buffer.from(file.sha256, 'hex').toString('base64');
    await this.retrying(() =>
      this.client.send(new PutObjectCommand({
        Bucket: this.bucket, Key, Body: createReadStream(file.path), ContentLength: file.sizeBytes, ChecksumSHA256,
        ContentType: 'application/octet-stream',
      })),
    );
  }

  private async uploadMultipart(file: StagedFile): Promise<void> {
    const Key = this.keyFor(file.sha256);
    const Bucket = this.bucket;
    const created = await this.send(() => this.client.send(new CreateMultipartUploadCommand({ Bucket, Key, ContentType: 'application/octet-stream' })));
    const UploadId = created.UploadId!;
    const partSize = Math.max(this.partSize, Math.ceil(file.sizeBytes / MAX_PARTS));
    const count = Math.ceil(file.sizeBytes / partSize);
    const parts: CompletedPart[] = new Array(count);
    let next = 0;
    let failed = false;
    const worker = async () => {
      while (!failed && next < count) {
        const i = next++;
        const start = i * partSize;
        const end = Math.min(file.sizeBytes, start + partSize) - 1;
        try {
          const res = await this.retrying(() =>
            this.client.send(new UploadPartCommand({
              Bucket, Key, UploadId, PartNumber: i + 1, Body: createReadStream(file.path, { start, end }), ContentLength: end - start + 1,
            })),
          );
          parts[i] = { ETag: res.ETag, PartNumber: i + 1 };
        } catch (err) {
          failed = true; // stop the other workers taking new parts
          throw err;
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(this.partConcurrency, count) }, worker));
      await this.client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
    } catch (err) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => undefined);
      throw wrap(err);
    }
  }

  async exists(sha256: string): Promise<boolean> {
    return (await this.size(sha256)) !== undefined;
  }

  async size(sha256: string): Promise<number | undefined> {
    const Key = this.keyFor(sha256);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
      return head.ContentLength ?? 0;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw wrap(err);
    }
  }

  async read(sha256: string, range?: BlobRange): Promise<Readable> {
    const Key = this.keyFor(sha256);
    if (range) checkRange(range, Number.MAX_SAFE_INTEGER); // shape only; the server knows the size
    let out;
    try {
      out = await this.client.send(new GetObjectCommand({
        Bucket: this.bucket, Key, Range: range ? `bytes=${range.start}-${range.end}` : undefined,
      }));
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(sha256);
      if (range && httpStatus(err) === 416) {
        const total = await this.size(sha256);
        if (total === undefined) throw new BlobNotFoundError(sha256);
        throw new BlobRangeError(range, total);
      }
      throw wrap(err);
    }
    const body = out.Body as Readable;
    if (!range) return body;
    // What the server actually sent: Content-Range, or the whole object when it ignored Range.
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(out.ContentRange ?? '');
    const served = m
      ? { start: Number(m[1]), end: Number(m[2]), total: Number(m[3]) }
      : { start: 0, end: (out.ContentLength ?? 0) - 1, total: out.ContentLength ?? 0 };
    // S3 clamps an end past the object to its last byte; our contract refuses such ranges instead.
    if (range.end >= served.total) {
      body.destroy();
      throw new BlobRangeError(range, served.total);
    }
    if (served.start === range.start && served.end === range.end) return body;
    // Some S3-compatible servers answer a wider range than asked (s3rver reads `bytes=0-0` as
    // `bytes=0-`); cut the asked bytes out of it rather than hand back the wrong ones.
    if (served.start <= range.start && served.end >= range.end) {
      return sliceStream(body, range.start - served.start, range.end - range.start + 1);
    }
    body.destroy();
    throw new BlobStoreUnavailableError(`S3 answered range ${range.start}-${range.end} with ${out.ContentRange ?? 'the whole object'}`);
  }

  async delete(sha256: string): Promise<void> {
    const Key = this.keyFor(sha256);
    await this.send(() => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key })));
  }

  async withLocalFile<T>(sha256: string, fn: (path: string) => Promise<T>): Promise<T> {
    const path = downloadPath(this.stagingDir);
    try {
      await pipeToNewFile(await this.read(sha256), path);
      return await fn(path);
    } finally {
      await rm(path, { force: true });
    }
  }

  async close(): Promise<void> {
    this.stopSweeper();
    this.client.destroy();
  }

  /** Runs one SDK call, surfacing failures as BlobStore errors. */
  private async send<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw wrap(err);
    }
  }

  /** Retries transient failures; `attempt` must build a fresh request body each time. */
  private async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    for (let n = 1; ; n++) {
      try {
        return await attempt();
      } catch (err) {
        if (n >= this.attempts || !isTransient(err)) throw wrap(err);
        await sleep(100 * 2 ** n);
      }
    }
  }
}

/** Bytes [skip, skip + take) of `src`; stops (and destroys) `src` once they have passed. */
function sliceStream(src: Readable, skip: number, take: number): Readable {
  async function* cut() {
    let toSkip = skip;
    let left = take;
    for await (const chunk of src as AsyncIterable<Buffer>) {
      let c = chunk;
      if (toSkip > 0) {
        const n = Math.min(toSkip, c.length);
        c = c.subarray(n);
        toSkip -= n;
      }
      if (c.length > left) c = c.subarray(0, left);
      left -= c.length;
      if (c.length > 0) yield c;
      if (left === 0) return; // leaving the loop destroys src
    }
    throw new BlobStoreUnavailableError('S3 response ended before the requested range');
  }
  return Readable.from(cut(), { objectMode: false });
}

function normalisePrefix(prefix: string): string {
  const p = prefix.replace(/^\/+/, '');
  return p === '' || p.endsWith('/') ? p : `${p}/`;
}

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function isNotFound(err: unknown): boolean {
  const name = (err as { name?: string })?.name;
  return name === 'NotFound' || name === 'NoSuchKey' || httpStatus(err) === 404;
}

function isTransient(err: unknown): boolean {
  const status = httpStatus(err);
  if (status === undefined) return !(err instanceof BlobStoreError); // network error, timeout
  return status >= 500 || status === 408 || status === 429;
}

/** Backend failures surface as one typed error the routes can map to 503. */
function wrap(err: unknown): Error {
  if (err instanceof BlobStoreError) return err;
  const what = err instanceof S3ServiceException ? `${err.name} (HTTP ${httpStatus(err) ?? '?'})` : String((err as Error)?.message ?? err);
  return new BlobStoreUnavailableError(`S3 request failed: ${what}`, { cause: err });
}
