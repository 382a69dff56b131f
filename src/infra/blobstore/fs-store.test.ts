import { createHash, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
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

  test('a staging file whose process is gone is removed at open and by the periodic sweep, whatever its age', async () => {
    const staging = join(root, '.staging');
    const host = hostname().replace(/[^A-Za-z0-9.-]/g, '_');
    // A pid that was running and is no more.
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const mine = `${host}~${process.pid}~${Math.round(performance.timeOrigin).toString(36)}~a.staging`;
    const names = {
      deadPid: `${host}~${dead}~abc~b.staging`,
      earlierRunOfThisPid: `${host}~${process.pid}~abc~c.download`,
      livePid: `${host}~${process.ppid}~abc~d.staging`,
      otherHost: `other-host~${dead}~abc~e.staging`,
      mine,
    };
    await mkdir(staging, { recursive: true });
    for (const n of Object.values(names)) await writeFile(join(staging, n), 'x');
    const store = await FsBlobStore.open({ root, stagingSweepMs: 50 });
    expect((await readdir(staging)).sort()).toEqual([names.livePid, names.mine, names.otherHost].sort());
    // While open: a crash leftover appearing later goes with the next sweep.
    const later = `${host}~${dead}~abc~f.staging`;
    await writeFile(join(staging, later), 'x');
    await expect.poll(async () => (await readdir(staging)).includes(later), { timeout: 2000 }).toBe(false);
    expect((await readdir(staging)).sort()).toEqual([names.livePid, names.mine, names.otherHost].sort());
    await store.close();
  });

  test('staging files are named after their process (so a sweep can tell a crash leftover)', async () => {
    const store = await FsBlobStore.open({ root });
    const before = new Set(await readdir(join(root, '.staging')));
    const body = new PassThrough();
    const staged = store.stage(body, 1000);
    body.write('hello');
    await new Promise((r) => setTimeout(r, 20));
    const seen = (await readdir(join(root, '.staging'))).filter((n) => !before.has(n));
    body.end();
    await (await staged).discard();
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatch(new RegExp(`^[^~]+~${process.pid}~[0-9a-z]+~[0-9a-f-]{36}\\.staging$`));
    await store.close();
  });
});
