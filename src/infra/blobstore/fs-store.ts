/**
 * Filesystem BlobStore (the default, one machine).
 *
 * Layout: `<root>/<h0h1>/<h2h3>/<sha256>` (two levels of 256-way fan-out keep directories small),
 * staging files in `<root>/.staging` so the final rename never crosses filesystems.
 *
 * Durability: the staged file is fsynced before commit; commit renames it into place and fsyncs
 * the directory, so a committed blob survives a crash. Files are written once and never modified,
 * so a reader that has opened a file always sees complete bytes.
 *
 * Concurrency: two commits of identical content may both find the target missing and both rename;
 * rename(2) replaces atomically and the bytes are the same, so either outcome is correct.
 * Deciding *when* bytes may be deleted (references, grace period) is the blobs module's job.
 */
import { close as closeCb, createReadStream, fstat as fstatCb, open as openCb } from 'node:fs';
import { mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { systemClock, type Clock } from '../../lib/clock';
import { DAY_MS } from '../../lib/utc';
import { StagedFileBlob, stageToFile, startStagingSweeper, STAGING_SWEEP_MS, sweepStaging, type StagedFile } from './staging';
import { assertSha256, BlobNotFoundError, checkRange, type BlobRange, type BlobStore, type StagedBlob } from './types';

const openFd = promisify(openCb);
const fstatFd = promisify(fstatCb);
const closeFd = promisify(closeCb);

export interface FsBlobStoreOptions {
  /** Directory that holds the blobs (created when missing). */
  root: string;
  clock?: Clock;
  /** Staging files older than this are removed at open and by the periodic sweep (left by a crash). Default one day. */
  staleStagingMs?: number;
  /** How often staging files are swept while open (those of a process that is gone at once). Default 10 minutes. */
  stagingSweepMs?: number;
}

export class FsBlobStore implements BlobStore {
  private readonly stagingDir: string;
  private stopSweeper: () => void = () => {};

  private constructor(private readonly root: string) {
    this.stagingDir = join(root, '.staging');
  }

  static async open(opts: FsBlobStoreOptions): Promise<FsBlobStore> {
    const store = new FsBlobStore(opts.root);
    await mkdir(store.stagingDir, { recursive: true });
    await sweepStaging(store.stagingDir, opts.staleStagingMs ?? DAY_MS, opts.clock ?? systemClock);
    store.stopSweeper = startStagingSweeper(store.stagingDir, opts.stagingSweepMs ?? STAGING_SWEEP_MS, opts.staleStagingMs ?? DAY_MS, opts.clock ?? systemClock);
    return store;
  }

  /** Where the bytes of `sha256` live (whether or not they exist). */
  pathFor(sha256: string): string {
    assertSha256(sha256);
    return join(this.root, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }

  async stage(body: Readable, maxBytes: number): Promise<StagedBlob> {
    const file = await stageToFile(body, this.stagingDir, maxBytes, { fsync: true });
    return new StagedFileBlob(file, () => this.moveIntoPlace(file));
  }

  /** Renames a staged file to its content address, or drops it when that address is taken. */
  private async moveIntoPlace(file: StagedFile): Promise<void> {
    const target = this.pathFor(file.sha256);
    const dir = dirname(target);
    if (await fileExists(target)) {
      await rm(file.path, { force: true });
      return;
    }
    const created = await mkdir(dir, { recursive: true });
    await rename(file.path, target);
    await fsyncDir(dir);
    // New fan-out directories must themselves be durable entries in their parents.
    if (created) {
      await fsyncDir(dirname(dir));
      await fsyncDir(dirname(dirname(dir)));
    }
  }

  async exists(sha256: string): Promise<boolean> {
    return (await this.size(sha256)) !== undefined;
  }

  async size(sha256: string): Promise<number | undefined> {
    try {
      return (await stat(this.pathFor(sha256))).size;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async read(sha256: string, range?: BlobRange): Promise<Readable> {
    // A numeric fd with a callback-based stream: about 10% faster than a FileHandle stream.
    let fd: number;
    try {
      fd = await openFd(this.pathFor(sha256), 'r');
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(sha256);
      throw err;
    }
    try {
      // Size from the open fd, so the check and the read see the same file.
      if (range) checkRange(range, (await fstatFd(fd)).size);
      return createReadStream('', { fd, start: range?.start, end: range?.end, autoClose: true, highWaterMark: 256 * 1024 });
    } catch (err) {
      await closeFd(fd);
      throw err;
    }
  }

  async delete(sha256: string): Promise<void> {
    // Fan-out directories stay: removing them would race with a concurrent commit's mkdir.
    await rm(this.pathFor(sha256), { force: true });
  }

  async withLocalFile<T>(sha256: string, fn: (path: string) => Promise<T>): Promise<T> {
    const path = this.pathFor(sha256);
    if (!(await this.exists(sha256))) throw new BlobNotFoundError(sha256);
    return fn(path);
  }

  async close(): Promise<void> {
    this.stopSweeper();
  }
}

async function fileExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

async function fsyncDir(dir: string): Promise<void> {
  let h: FileHandle | undefined;
  try {
    h = await open(dir, 'r');
    await h.sync();
  } catch (err) {
    // Some platforms/filesystems cannot fsync a directory; the rename itself still happened.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF') throw err;
  } finally {
    await h?.close();
  }
}

function isNotFound(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
