/**
 * Shared by both stores: stream a body into a private temp file while hashing and counting, so the
 * content address is known before the bytes go anywhere permanent. Memory use is one chunk at a
 * time (back-pressure from the file write stream), whatever the body's size.
 */
import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { createWriteStream } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Clock } from '../../lib/clock';
import { BlobTooLargeError, type StagedBlob } from './types';

export interface StagedFile {
  path: string;
  sha256: string;
  sizeBytes: number;
}

const STAGING_SUFFIX = '.staging';

/**
 * Every staging and download file is named after the process that writes it:
 * `<host>~<pid>~<start>~<uuid>.staging`, `<start>` telling this run of a pid from an earlier one (a
 * container's svc is pid 1 every time). A sweep on the same host removes a file whose process is
 * gone at once, whatever its age (an upload cut by a crash); files of other hosts (a shared disk)
 * and of older names only once they are older than the sweep's age.
 */
const HOST = hostname().replace(/[^A-Za-z0-9.-]/g, '_');
const OWNER = `${HOST}~${process.pid}~${Math.round(performance.timeOrigin).toString(36)}`;
const tempName = (suffix: string) => `${OWNER}~${randomUUID()}${suffix}`;

/** Whether the process that named this file is gone: same host, and its pid is not running (or is this process's, from an earlier run). */
function ownerGone(name: string): boolean {
  const [host, pid, start] = name.split('~');
  if (host !== HOST || !/^\d+$/.test(pid ?? '') || start === undefined) return false;
  if (Number(pid) === process.pid) return `${host}~${pid}~${start}` !== OWNER;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Writes `body` to a new file in `dir` (which must exist). With `fsync`, the data is on disk before
 * this resolves. On any failure, including BlobTooLargeError, the file is removed.
 *
 * `body` is never destroyed here: past maxBytes it is unpiped and left paused, so an HTTP caller
 * can still answer 413 on the same connection (and decide whether to drain or close it).
 */
export async function stageToFile(body: Readable, dir: string, maxBytes: number, opts: { fsync: boolean }): Promise<StagedFile> {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  const path = join(dir, tempName(STAGING_SUFFIX));
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const meter = new Transform({
    // A little slack (bounded, ~1 MiB each side) lets reading, hashing and writing overlap.
    highWaterMark: 1024 * 1024,
    transform(chunk: Buffer, _enc, done) {
      sizeBytes += chunk.length;
      if (sizeBytes > maxBytes) return done(new BlobTooLargeError(maxBytes));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  const onBodyError = (err: Error) => meter.destroy(err);
  body.once('error', onBodyError);
  try {
    // pipe() (unlike pipeline) leaves the source alive when the meter fails.
    body.pipe(meter);
    await pipeToNewFile(meter, path, { flush: opts.fsync, highWaterMark: 256 * 1024 });
    return { path, sha256: hash.digest('hex'), sizeBytes };
  } catch (err) {
    body.unpipe(meter);
    throw err;
  } finally {
    body.off('error', onBodyError);
  }
}

/**
 * Streams `source` into a new file at `path` (created exclusively, mode 0600); resolves once the file
 * is closed (with `flush`, fsynced first). On failure the file is removed and the error rethrown.
 */
export async function pipeToNewFile(source: Readable, path: string, opts: { flush?: boolean; highWaterMark?: number } = {}): Promise<void> {
  const out = createWriteStream(path, { flags: 'wx', mode: 0o600, ...opts });
  try {
    await pipeline(source, out);
  } catch (err) {
    // pipeline rejects as soon as the source fails, often before the file's open() has finished; the
    // destroyed stream still creates the file, then closes it. Removed before that, it would stay
    // (seen: 2–6 files in 1,000 too-large uploads with libuv's pool busy). So wait for the close.
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
    await rm(path, { force: true });
    throw err;
  }
}

/**
 * Removes staging and download files left by a crash mid-upload: those whose process is gone (see
 * OWNER), and any older than maxAgeMs. Returns how many.
 */
export async function sweepStaging(dir: string, maxAgeMs: number, clock: Clock): Promise<number> {
  let removed = 0;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  for (const name of names) {
    if (!name.endsWith(STAGING_SUFFIX) && !name.endsWith('.download')) continue;
    const p = join(dir, name);
    const st = await stat(p).catch(() => undefined);
    if (st && (ownerGone(name) || clock.now() - st.mtimeMs > maxAgeMs)) {
      await rm(p, { force: true });
      removed++;
    }
  }
  return removed;
}

/** A fresh path in `dir` for a temporary download (swept like staging files). */
export function downloadPath(dir: string): string {
  return join(dir, tempName('.download'));
}

/** How often an open store sweeps its staging directory. */
export const STAGING_SWEEP_MS = 10 * 60_000;

/** Sweeps `dir` (sweepStaging) every `intervalMs`, real time; returns a stop function. */
export function startStagingSweeper(dir: string, intervalMs: number, maxAgeMs: number, clock: Clock, onError?: (err: unknown) => void): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    sweepStaging(dir, maxAgeMs, clock).catch((e) => onError?.(e)).finally(() => (busy = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * The commit/discard state machine both stores share. `place` moves the staged file to its
 * content-addressed home (removing the staged copy); concurrent commit() calls share one attempt,
 * and a failed attempt can be retried or discarded.
 */
export class StagedFileBlob implements StagedBlob {
  readonly sha256: string;
  readonly sizeBytes: number;
  private state: 'staged' | 'committed' | 'discarded' = 'staged';
  private committing?: Promise<void>;

  constructor(private readonly file: StagedFile, private readonly place: () => Promise<void>) {
    this.sha256 = file.sha256;
    this.sizeBytes = file.sizeBytes;
  }

  commit(): Promise<void> {
    if (this.state === 'discarded') return Promise.reject(new Error('cannot commit a discarded staged blob'));
    this.committing ??= this.place().then(
      () => void (this.state = 'committed'),
      (err) => {
        this.committing = undefined;
        throw err;
      },
    );
    return this.committing;
  }

  async discard(): Promise<void> {
    if (this.committing) await this.committing.catch(() => undefined);
    if (this.state !== 'staged') return;
    this.state = 'discarded';
    await rm(this.file.path, { force: true });
  }
}
