/**
 * Blob I/O benchmark: the filesystem BlobStore against plain copies of the same bytes on the same
 * disk, in one run, as ratios.
 *
 *   upload: store.stage(fileStream) + commit   vs  stream copy + fsync  (and fs.copyFile)
 *   read:   store.read(sha) drained             vs  fs.createReadStream drained
 *
 * The store does more than a copy (SHA-256 of every byte, fsync, rename, directory fsync), so the
 * upload ratio is the price of content addressing and durability. Runs are interleaved and the
 * median kept, since a machine may be shared; CPU time is printed too, as it varies less with load.
 * Reads come from the page cache for both sides.
 *
 *   npx tsx bench/blob-io.ts [--mb 100] [--runs 7] [--dir <dir on the disk to test>]
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createHash, randomFillSync } from 'node:crypto';
import { FsBlobStore } from '../src/infra/blobstore/fs-store';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : def;
}

const MB = Number(arg('mb', '100'));
const RUNS = Number(arg('runs', '7'));
const BYTES = MB * 1024 * 1024;

const nullSink = () => new Writable({ write: (_c, _e, done) => done(), highWaterMark: 256 * 1024 });

/** Writes the source file in 1 MiB random chunks (never the whole thing in memory). */
async function makeSource(path: string): Promise<void> {
  const h = await open(path, 'w');
  const chunk = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < BYTES; written += chunk.length) {
    randomFillSync(chunk);
    await h.write(chunk, 0, Math.min(chunk.length, BYTES - written));
  }
  await h.sync();
  await h.close();
}

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 10);
/** Largest RSS growth seen during any single run of each operation. */
const rssGrowth: Record<string, number> = {};
/** CPU time (user + system, all threads) per run: steadier than wall time on a busy machine. */
const cpuMs: Record<string, number[]> = {};

async function timed(name: string, fn: () => Promise<void>): Promise<number> {
  const before = process.memoryUsage.rss();
  const overallPeak = peakRss;
  peakRss = before;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  (cpuMs[name] ??= []).push((c.user + c.system) / 1000);
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
  rssGrowth[name] = Math.max(rssGrowth[name] ?? 0, peakRss - before);
  peakRss = Math.max(peakRss, overallPeak);
  return ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const dir = await mkdtemp(join(arg('dir', tmpdir()), 'svc-blob-bench-'));
  try {
    const source = join(dir, 'source.bin');
    await makeSource(source);
    const store = await FsBlobStore.open({ root: join(dir, 'blobs') });
    const rssStart = process.memoryUsage.rss();
    peakRss = rssStart;
    const t = { store: [] as number[], stream: [] as number[], copyFile: [] as number[], storeRead: [] as number[], plainRead: [] as number[], hashOnly: [] as number[] };
    let key = '';

    // One extra first round warms the heap, buffer pools and page cache; it is not counted.
    for (let i = -1; i < RUNS; i++) {
      if (i === 0) {
        for (const k of Object.keys(t) as (keyof typeof t)[]) t[k].length = 0;
        for (const k of Object.keys(rssGrowth)) delete rssGrowth[k];
        for (const k of Object.keys(cpuMs)) delete cpuMs[k];
      }
      if (key) await store.delete(key); // otherwise commit finds the bytes already stored and skips the write
      t.store.push(await timed('store', async () => {
        const staged = await store.stage(createReadStream(source, { highWaterMark: 256 * 1024 }), BYTES);
        await staged.commit();
        key = staged.sha256;
      }));
      const copy = join(dir, `copy-${i}.bin`);
      t.stream.push(await timed('stream', () =>
        pipeline(createReadStream(source, { highWaterMark: 256 * 1024 }), createWriteStream(copy, { flush: true, highWaterMark: 256 * 1024 })),
      ));
      await rm(copy);
      t.copyFile.push(await timed('copyFile', () => copyFile(source, copy)));
      await rm(copy);
      t.hashOnly.push(await timed('hashOnly', async () => {
        const hash = createHash('sha256');
        for await (const c of createReadStream(source, { highWaterMark: 256 * 1024 })) hash.update(c as Buffer);
        hash.digest();
      }));
      // The first read of a just-written file is slower whoever does it: prime once, then
      // alternate which side goes first.
      await pipeline(createReadStream(store.pathFor(key)), nullSink());
      const storeRead = async () => void t.storeRead.push(await timed('storeRead', async () => pipeline(await store.read(key), nullSink())));
      // Same file as the store reads, so only the store's own overhead differs.
      const plainRead = async () =>
        void t.plainRead.push(await timed('plainRead', () => pipeline(createReadStream(store.pathFor(key), { highWaterMark: 256 * 1024 }), nullSink())));
      if (i % 2 === 0) {
        await storeRead();
        await plainRead();
      } else {
        await plainRead();
        await storeRead();
      }
    }
    clearInterval(sampler);

    const m = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)])) as Record<keyof typeof t, number>;
    const mbps = (ms: number) => (MB / (ms / 1000)).toFixed(0);
    const row = (name: string, key: keyof typeof t) =>
      console.log(`${name.padEnd(42)} ${m[key].toFixed(0).padStart(6)} ms ${mbps(m[key]).padStart(6)} MB/s  cpu ${median(cpuMs[key]).toFixed(0).padStart(4)} ms  peak RSS +${(rssGrowth[key] / 2 ** 20).toFixed(0)} MB`);
    console.log(`blob-io: ${MB} MB, median of ${RUNS} interleaved runs after 1 warm-up, dir ${dir}`);
    row('upload: FsBlobStore stage+commit', 'store');
    row('upload baseline: stream copy + fsync', 'stream');
    row('upload baseline: fs.copyFile (no fsync)', 'copyFile');
    row('floor: read + sha256 only (no write)', 'hashOnly');
    row('read: FsBlobStore.read drained', 'storeRead');
    row('read baseline: createReadStream(same file)', 'plainRead');
    console.log(`ratio upload store / stream copy+fsync: ${(m.store / m.stream).toFixed(2)}`);
    console.log(`ratio upload store / copyFile:          ${(m.store / m.copyFile).toFixed(2)}`);
    console.log(`ratio read store / plain stream:         ${(m.storeRead / m.plainRead).toFixed(2)}`);
    const cpu = (k: keyof typeof t) => median(cpuMs[k]);
    console.log(`cpu ratio upload store / stream copy+fsync: ${(cpu('store') / cpu('stream')).toFixed(2)}; read store / plain: ${(cpu('storeRead') / cpu('plainRead')).toFixed(2)}`);
    console.log(`RSS: at start ${(rssStart / 2 ** 20).toFixed(0)} MB, peak ${(peakRss / 2 ** 20).toFixed(0)} MB (+${((peakRss - rssStart) / 2 ** 20).toFixed(0)} MB), maxRSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
    await store.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
