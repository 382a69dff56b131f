import { mkdtempSync, openSync, readSync, closeSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { openDatabase, WAL_CHECKPOINT_PAGES, type DatabaseHandle } from './database';

let dir: string | undefined;
let handle: DatabaseHandle | undefined;
afterEach(async () => {
  await handle?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  handle = dir = undefined;
});

/** The WAL header's checkpoint sequence number: SQLite adds one each time it restarts the WAL after a checkpoint. */
function walRestarts(file: string): number {
  const fd = openSync(file, 'r');
  try {
    const header = Buffer.alloc(16);
    readSync(fd, header, 0, 16, 0);
    return header.readUInt32BE(12);
  } finally {
    closeSync(fd);
  }
}

test('SQLite checkpoints the WAL every WAL_CHECKPOINT_PAGES pages, not every 1,000', () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-db-'));
  handle = openDatabase({ dataDir: dir, poolMax: 1 });
  const sqlite = handle.sqlite!;
  expect(sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(WAL_CHECKPOINT_PAGES);
  expect(sqlite.pragma('journal_size_limit', { simple: true })).toBe(64 * 1024 * 1024);
  sqlite.exec('create table t (id integer primary key, v blob not null)');
  const insert = sqlite.prepare('insert into t (v) values (?)');
  const page = Buffer.alloc(4000, 7);
  // Each commit appends about 100 pages (one 4,000-byte row a page).
  const commit = sqlite.transaction(() => { for (let i = 0; i < 100; i++) insert.run(page); });
  const wal = join(dir, 'svc.sqlite-wal');
  for (let i = 0; i < 30; i++) commit();
  const start = walRestarts(wal);
  // ~3,000 more pages: SQLite's default would have checkpointed and restarted the WAL twice by now.
  for (let i = 0; i < 30; i++) commit();
  expect(walRestarts(wal)).toBe(start);
  // Past WAL_CHECKPOINT_PAGES the checkpoint runs and the next write starts the WAL over.
  for (let i = 0; i < WAL_CHECKPOINT_PAGES / 100; i++) commit();
  expect(walRestarts(wal)).toBeGreaterThan(start);
  expect(sqlite.prepare('select count(*) as n from t').get()).toEqual({ n: 60 * 100 + WAL_CHECKPOINT_PAGES });
});
