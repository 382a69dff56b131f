/**
 * The behaviour every BlobStore must have, as one vitest suite run against each backend
 * (fs-store.test.ts, s3-store.test.ts). Test-only; not imported by the service.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BlobNotFoundError, BlobRangeError, BlobTooLargeError, InvalidBlobKeyError, type BlobStore } from './types';

export interface ContractHarness {
  store: BlobStore;
  /** Files currently in the store's local staging/temp directory. */
  stagingFiles(): Promise<string[]>;
  /** Number of stored objects (committed blobs) in the backend. */
  storedCount(): Promise<number>;
  teardown(): Promise<void>;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const body = (b: Buffer) => Readable.from([b]);

async function readAll(r: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of r) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/**
 * A stream of `total` pseudo-random bytes made chunk by chunk (never allocated at once), hashing
 * what it emits so the expected digest is known without keeping the bytes.
 */
export function generatedBytes(total: number, chunkSize = 256 * 1024): { stream: Readable; digest(): string } {
  const hash = createHash('sha256');
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const chunk = randomBytes(Math.min(chunkSize, total - sent));
      sent += chunk.length;
      hash.update(chunk);
      this.push(chunk);
    },
  });
  return { stream, digest: () => hash.digest('hex') };
}

/** Samples RSS while `work` runs; resolves with its result and the peak growth in bytes. */
export async function peakRssGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growth: number }> {
  globalThis.gc?.();
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { result, growth: peak - base };
  } finally {
    clearInterval(timer);
  }
}

export function blobStoreContract(name: string, setup: () => Promise<ContractHarness>): void {
  describe(`BlobStore contract: ${name}`, () => {
    let h: ContractHarness;
    let store: BlobStore;
    beforeAll(async () => {
      h = await setup();
      store = h.store;
    });
    afterAll(async () => {
      await h?.teardown();
    });

    test('stage hashes and counts; commit makes the bytes readable under their sha256', async () => {
      const bytes = randomBytes(70_000);
      const staged = await store.stage(body(bytes), 1_000_000);
      expect(staged.sha256).toBe(sha(bytes));
      expect(staged.sizeBytes).toBe(bytes.length);
      expect(await store.exists(staged.sha256)).toBe(false); // staged is not stored
      await staged.commit();
      expect(await store.exists(staged.sha256)).toBe(true);
      expect(await store.size(staged.sha256)).toBe(bytes.length);
      expect((await readAll(await store.read(staged.sha256))).equals(bytes)).toBe(true);
      expect(await h.stagingFiles()).toEqual([]);
    });

    test('an empty body is a valid blob', async () => {
      const staged = await store.stage(body(Buffer.alloc(0)), 10);
      await staged.commit();
      expect(staged.sha256).toBe(sha(Buffer.alloc(0)));
      expect(await store.size(staged.sha256)).toBe(0);
      expect((await readAll(await store.read(staged.sha256))).length).toBe(0);
      await expect(store.read(staged.sha256, { start: 0, end: 0 })).rejects.toBeInstanceOf(BlobRangeError);
      await store.delete(staged.sha256);
    });

    test('committing the same bytes again (and the same staged blob twice) is idempotent', async () => {
      const bytes = randomBytes(5000);
      const before = await h.storedCount();
      const a = await store.stage(body(bytes), 10_000);
      await a.commit();
      await a.commit();
      await a.discard(); // no-op after commit
      const b = await store.stage(body(bytes), 10_000);
      await b.commit();
      expect(b.sha256).toBe(a.sha256);
      expect(await h.storedCount()).toBe(before + 1);
      expect((await readAll(await store.read(a.sha256))).equals(bytes)).toBe(true);
      expect(await h.stagingFiles()).toEqual([]);
    });

    test('concurrent uploads of identical content all succeed and store one intact object', async () => {
      const bytes = randomBytes(300_000);
      const before = await h.storedCount();
      const results = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const s = await store.stage(Readable.from(chunks(bytes, 7000)), 1_000_000);
          await s.commit();
          return s.sha256;
        }),
      );
      expect(new Set(results)).toEqual(new Set([sha(bytes)]));
      expect(await h.storedCount()).toBe(before + 1);
      expect((await readAll(await store.read(sha(bytes)))).equals(bytes)).toBe(true);
      expect(await h.stagingFiles()).toEqual([]);
    });

    test('past maxBytes: BlobTooLargeError, nothing staged or stored, the source left undestroyed', async () => {
      const bytes = randomBytes(50_000);
      const before = await h.storedCount();
      const source = Readable.from(chunks(bytes, 4096));
      const err = await store.stage(source, 20_000).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BlobTooLargeError);
      expect((err as BlobTooLargeError).code).toBe('BLOB_TOO_LARGE');
      expect(source.destroyed).toBe(false);
      expect(await h.stagingFiles()).toEqual([]);
      expect(await h.storedCount()).toBe(before);
      expect(await store.exists(sha(bytes))).toBe(false);
    });

    test('exactly maxBytes is accepted', async () => {
      const bytes = randomBytes(20_000);
      const s = await store.stage(body(bytes), 20_000);
      expect(s.sizeBytes).toBe(20_000);
      await s.discard();
    });

    test('discard drops the staged bytes; commit after discard fails', async () => {
      const bytes = randomBytes(1000);
      const s = await store.stage(body(bytes), 10_000);
      expect(await h.stagingFiles()).toHaveLength(1);
      await s.discard();
      await s.discard();
      expect(await h.stagingFiles()).toEqual([]);
      await expect(s.commit()).rejects.toThrow(/discarded/);
      expect(await store.exists(s.sha256)).toBe(false);
    });

    test('a source that errors mid-stream rejects stage and leaves no staging file', async () => {
      const failing = new Readable({ read() {} });
      const p = store.stage(failing, 1_000_000);
      failing.push(randomBytes(1000));
      setTimeout(() => failing.destroy(new Error('client went away')), 20);
      await expect(p).rejects.toThrow('client went away');
      expect(await h.stagingFiles()).toEqual([]);
    });

    describe('range reads', () => {
      const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) % 256));
      const key = sha(bytes);
      beforeAll(async () => {
        await (await store.stage(body(bytes), 10_000)).commit();
      });
      const cases: Array<[string, number, number]> = [
        ['first byte', 0, 0],
        ['last byte', 999, 999],
        ['middle', 100, 349],
        ['whole', 0, 999],
      ];
      test.each(cases)('%s (%i-%i inclusive)', async (_label, start, end) => {
        const got = await readAll(await store.read(key, { start, end }));
        expect(got.equals(bytes.subarray(start, end + 1))).toBe(true);
      });
      test.each([
        [0, 1000],
        [1000, 1000],
        [500, 499],
        [-1, 3],
      ])('range %i-%i is refused with BlobRangeError', async (start, end) => {
        const err = await store.read(key, { start, end }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(BlobRangeError);
        expect((err as BlobRangeError).code).toBe('RANGE_NOT_SATISFIABLE');
      });
    });

    test('reading, sizing or localising a missing blob', async () => {
      const missing = sha(Buffer.from('never stored'));
      expect(await store.exists(missing)).toBe(false);
      expect(await store.size(missing)).toBeUndefined();
      await expect(store.read(missing)).rejects.toBeInstanceOf(BlobNotFoundError);
      await expect(store.read(missing, { start: 0, end: 0 })).rejects.toBeInstanceOf(BlobNotFoundError);
      let called = false;
      await expect(store.withLocalFile(missing, async () => void (called = true))).rejects.toBeInstanceOf(BlobNotFoundError);
      expect(called).toBe(false);
    });

    test('delete is idempotent', async () => {
      const bytes = randomBytes(2000);
      const key = sha(bytes);
      await store.delete(key); // never existed
      await (await store.stage(body(bytes), 10_000)).commit();
      await store.delete(key);
      expect(await store.exists(key)).toBe(false);
      await expect(store.read(key)).rejects.toBeInstanceOf(BlobNotFoundError);
      await store.delete(key);
    });

    test('withLocalFile hands a path holding the bytes and cleans up after', async () => {
      const bytes = randomBytes(40_000);
      await (await store.stage(body(bytes), 100_000)).commit();
      const out = await store.withLocalFile(sha(bytes), async (path) => (await readFile(path)).equals(bytes));
      expect(out).toBe(true);
      expect(await h.stagingFiles()).toEqual([]);
      await expect(store.withLocalFile(sha(bytes), async () => {
        throw new Error('parser failed');
      })).rejects.toThrow('parser failed');
      expect(await h.stagingFiles()).toEqual([]);
    });

    test('keys that are not sha256 hex are refused, never used as paths', async () => {
      for (const bad of ['../../etc/passwd', 'A'.repeat(64), 'abc', `${'a'.repeat(64)}/x`]) {
        await expect(store.exists(bad)).rejects.toBeInstanceOf(InvalidBlobKeyError);
        await expect(store.read(bad)).rejects.toBeInstanceOf(InvalidBlobKeyError);
        await expect(store.delete(bad)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      }
    });

    test('a 200 MB upload and read-back stream without growing RSS by more than a few tens of MB', async () => {
      const total = 200 * 1024 * 1024;
      const gen = generatedBytes(total);
      const { result: staged, growth: upGrowth } = await peakRssGrowth(async () => {
        const s = await store.stage(gen.stream, total);
        await s.commit();
        return s;
      });
      expect(staged.sha256).toBe(gen.digest());
      expect(staged.sizeBytes).toBe(total);
      const { result: readBack, growth: downGrowth } = await peakRssGrowth(async () => {
        const hash = createHash('sha256');
        let n = 0;
        for await (const c of await store.read(staged.sha256)) {
          hash.update(c as Buffer);
          n += (c as Buffer).length;
        }
        return { digest: hash.digest('hex'), n };
      });
      expect(readBack).toEqual({ digest: staged.sha256, n: total });
      console.log(`[${name}] 200 MB: upload RSS +${mb(upGrowth)} MB, read RSS +${mb(downGrowth)} MB`);
      expect(upGrowth).toBeLessThan(64 * 1024 * 1024);
      expect(downGrowth).toBeLessThan(64 * 1024 * 1024);
      await store.delete(staged.sha256);
    }, 120_000);
  });
}

const mb = (n: number) => (n / 1024 / 1024).toFixed(1);

function* chunks(b: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}
