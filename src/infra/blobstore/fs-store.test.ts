import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { blobStoreContract } from './contract';
import { FsBlobStore } from './fs-store';

/** Every regular file under dir, skipping the staging directory. */
async function countFiles(dir: string): Promise<number> {
  let n = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name === '.staging') continue;
    n += e.isDirectory() ? await countFiles(join(dir, e.name)) : 1;
  }
  return n;
}

blobStoreContract('filesystem', async () => {
  const root = await mkdtemp(join(tmpdir(), 'svc-fsblobs-'));
  const store = await FsBlobStore.open({ root });
  return {
    store,
    stagingFiles: () => readdir(join(root, '.staging')),
    storedCount: () => countFiles(root),
    teardown: async () => {
      await store.close();
      await rm(root, { recursive: true, force: true });
    },
  };
});

describe('FsBlobStore specifics', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-fsblobs-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('bytes land at <root>/<2 hex>/<2 hex>/<sha256>, private to the service user', async () => {
    const store = await FsBlobStore.open({ root });
    const bytes = randomBytes(100);
    const key = createHash('sha256').update(bytes).digest('hex');
    await (await store.stage(Readable.from([bytes]), 1000)).commit();
    const path = join(root, key.slice(0, 2), key.slice(2, 4), key);
    expect(store.pathFor(key)).toBe(path);
    const st = await stat(path);
    expect(st.size).toBe(100);
    expect(st.mode & 0o777).toBe(0o600);
    await store.withLocalFile(key, async (p) => expect(p).toBe(path));
  });

  test('open removes staging files older than a day (crash leftovers) and keeps fresh ones', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 21));
    const staging = join(root, '.staging');
    await FsBlobStore.open({ root, clock });
    const old = join(staging, 'old.staging');
    const fresh = join(staging, 'fresh.staging');
    await writeFile(old, 'x');
    await writeFile(fresh, 'y');
    const now = clock.now() / 1000;
    await utimes(old, now - 2 * 86_400, now - 2 * 86_400);
    await utimes(fresh, now - 60, now - 60);
    await FsBlobStore.open({ root, clock });
    expect((await readdir(staging)).sort()).toEqual(['fresh.staging']);
  });
});
