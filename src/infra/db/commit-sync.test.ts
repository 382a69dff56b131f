import { existsSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { openTempSqlite, type TempSqlite } from '../../../test/helpers/temp-sqlite';
import { createWriteBatcher } from './write-batcher';
import { createMemoryStore, type NewVersion } from '../../modules/memory/store';
import { createBatcher } from '../../modules/billing/batcher';
import { createCommitSync } from './commit-sync';
import { migrateUpTo } from './migrate';
import type { Database } from './schema';

let t: TempSqlite;
let dir: string;
let sqlite: SQLite.Database;
let db: Kysely<Database>;

beforeEach(async () => {
  t = await openTempSqlite('commit-sync');
  ({ dir, sqlite, db } = t);
  sqlite.exec('create table t (id integer primary key, v text not null)');
});
afterEach(() => t.close());

/** A flush the test finishes by hand, to see who waits for which flush. */
function manualFlush() {
  const pending: { resolve(): void; reject(e: Error): void }[] = [];
  return {
    pending,
    flush: () => new Promise<void>((resolve, reject) => pending.push({ resolve, reject })),
  };
}
const insert = (v: string) => (trx: Kysely<Database>) => sql`insert into t (v) values (${v})`.execute(trx);
const rows = () => sqlite.prepare('select v from t order by id').all().map((r) => (r as { v: string }).v);
const synchronous = () => sqlite.pragma('synchronous', { simple: true });
/** Lets pending promise callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

test('the deferred transaction commits with synchronous NORMAL and puts FULL back', async () => {
  const commits = createCommitSync(db, sqlite);
  let inside: unknown;
  await commits.transaction(async (trx) => {
    inside = (await sql<{ synchronous: number }>`pragma synchronous`.execute(trx)).rows[0].synchronous;
    await insert('a')(trx);
  });
  expect(inside).toBe(1);
  expect(synchronous()).toBe(2);
  expect(rows()).toEqual(['a']);
  expect(commits.unsynced).toBe(true);
  await commits.durable();
  expect(commits.unsynced).toBe(false);
  expect(commits.flushes).toBe(1);
  expect(existsSync(join(dir, 'db.sqlite-wal'))).toBe(true);
  await commits.close();
});

test('a failing transaction rolls back, leaves FULL in place and nothing to flush', async () => {
  const commits = createCommitSync(db, sqlite);
  await expect(commits.transaction(async (trx) => {
    await insert('a')(trx);
    throw new Error('refused');
  })).rejects.toThrow('refused');
  expect(rows()).toEqual([]);
  expect(synchronous()).toBe(2);
  expect(commits.unsynced).toBe(false);
  await commits.durable();
  expect(commits.flushes).toBe(0);
});

test('durable() waits for a flush that started after the commit; commits before a flush share it', async () => {
  const m = manualFlush();
  const commits = createCommitSync(db, sqlite, { flush: m.flush });
  await commits.transaction(insert('a'));
  await commits.transaction(insert('b'));
  let aDone = false;
  let bDone = false;
  void commits.durable().then(() => { aDone = true; });
  void commits.durable().then(() => { bDone = true; });
  await settle();
  expect(m.pending).toHaveLength(1);

  // A commit while that flush runs is not covered by it.
  await commits.transaction(insert('c'));
  let cDone = false;
  void commits.durable().then(() => { cDone = true; });
  m.pending[0].resolve();
  await settle();
  expect([aDone, bDone, cDone]).toEqual([true, true, false]);
  expect(m.pending).toHaveLength(2);
  expect(commits.unsynced).toBe(true);
  m.pending[1].resolve();
  await settle();
  expect(cDone).toBe(true);
  expect(commits.unsynced).toBe(false);
  expect(commits.flushes).toBe(2);
});

test('a failed flush is final: later commits are never reported durable', async () => {
  const m = manualFlush();
  const commits = createCommitSync(db, sqlite, { flush: m.flush });
  await commits.transaction(insert('a'));
  const first = commits.durable();
  await settle();
  m.pending[0].reject(new Error('EIO'));
  await expect(first).rejects.toThrow(/flushing the SQLite WAL failed.*EIO/);
  await commits.transaction(insert('b'));
  await expect(commits.durable()).rejects.toThrow(/no longer acknowledged/);
  expect(m.pending).toHaveLength(1);
});

test('memory write batcher: a write is acknowledged only once its batch is flushed', async () => {
  const m = manualFlush();
  const commits = createCommitSync(db, sqlite, { flush: m.flush });
  const batcher = createWriteBatcher(commits);
  const outcomes: string[] = [];
  const ok = batcher.submit(async (trx) => { await insert('a')(trx as never); return 'a'; }, 'agent-1').then((v) => outcomes.push(`ok ${v}`));
  const refused = batcher.submit(async (trx) => {
    await insert('x')(trx as never);
    throw new Error('over the cap');
  }, 'agent-2').catch((e: Error) => outcomes.push(`refused ${e.message}`));
  for (let i = 0; i < 5 && m.pending.length === 0; i++) await settle();
  // Committed (the refused write rolled back to its savepoint), not yet flushed: nobody is answered.
  expect(rows()).toEqual(['a']);
  expect(outcomes).toEqual([]);
  m.pending[0].resolve();
  await Promise.all([ok, refused]);
  expect(outcomes.sort()).toEqual(['ok a', 'refused over the cap']);
});

test('memory write batcher: a job submitted with durable: false is answered at its commit; the writes beside it still wait for the flush', async () => {
  const m = manualFlush();
  const commits = createCommitSync(db, sqlite, { flush: m.flush });
  const batcher = createWriteBatcher(commits);
  const outcomes: string[] = [];
  const write = batcher.submit(async (trx) => { await insert('w')(trx as never); return 'write'; }, 'agent-1').then((v) => outcomes.push(v));
  const count = batcher.submit(async (trx) => { await insert('c')(trx as never); return 'count'; }, 'agent-1', { durable: false }).then((v) => outcomes.push(v));
  await count;
  // Both committed in one batch, the flush has started and not finished: only the count is answered.
  expect(rows()).toEqual(['w', 'c']);
  expect(m.pending).toHaveLength(1);
  expect(commits.unsynced).toBe(true);
  await settle();
  expect(outcomes).toEqual(['count']);
  m.pending[0].resolve();
  await write;
  expect(outcomes).toEqual(['count', 'write']);
});

test('memory reads are answered only once what they saw is on disk, also when they waited for the write batch', async () => {
  await migrateUpTo(db, '0100_memory');
  const m = manualFlush();
  const commits = createCommitSync(db, sqlite, { flush: m.flush });
  const store = createMemoryStore({ db, sqlite, commits });
  const version = (value: string): NewVersion => ({
    agentId: 'agent-1', key: 'k', value: JSON.stringify(value), sizeBytes: value.length + 2, importance: 'normal', importanceRank: 2,
    source: null, confidence: 1, derivedStart: null, derivedEnd: null, expiresAt: null, now: 1000,
  });
  const seen: string[] = [];
  const read = () => store.getWithCounters('agent-1', 'k', '1970-01', 1000).then((r) => { seen.push(r?.entry.value ?? 'absent'); });

  // 1. Committed, flush running: a read straight on the connection sees the value and waits for the flush.
  const first = store.put(version('one'), '1970-01', null, () => {});
  for (let i = 0; i < 5 && m.pending.length === 0; i++) await settle();
  expect(m.pending).toHaveLength(1);
  const r1 = read();
  await settle();
  expect(seen).toEqual([]);
  m.pending[0].resolve();
  await Promise.all([first, r1]);
  expect(seen).toEqual(['"one"']);

  // 2. A read issued while the batch's transaction is open waits for its COMMIT, sees it, then waits for the flush.
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  const second = store.put(version('two'), '1970-01', null, () => {}, { charge: () => held });
  await settle();
  expect(sqlite.inTransaction).toBe(true);
  const r2 = read();
  await settle();
  release();
  for (let i = 0; i < 5 && m.pending.length < 2; i++) await settle();
  expect(m.pending).toHaveLength(2);
  await settle();
  expect(seen).toEqual(['"one"']);
  m.pending[1].resolve();
  await Promise.all([second, r2]);
  expect(seen).toEqual(['"one"', '"two"']);

  // 3. Nothing unflushed: the same read answers (from the read cache) at once.
  await read();
  expect(seen).toEqual(['"one"', '"two"', '"two"']);
  expect(m.pending).toHaveLength(2);
});

test('charge batcher: outcomes are settled only after durable() resolves', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  const batcher = createBatcher<number, number>(async (jobs) => jobs.map((j) => ({ ok: true as const, value: j * 2 })), { durable: () => gate });
  let value: number | undefined;
  const p = batcher.submit(21).then((v) => { value = v; });
  for (let i = 0; i < 5; i++) await settle();
  expect(value).toBeUndefined();
  release();
  await p;
  expect(value).toBe(42);
});

test('without SQLite (PostgreSQL) the transaction is plain and durable() resolves at once', async () => {
  const commits = createCommitSync(db);
  await commits.transaction(insert('a'));
  expect(commits.unsynced).toBe(false);
  await commits.durable();
  expect(commits.flushes).toBe(0);
  expect(synchronous()).toBe(2);
});

test('close() flushes commits nobody has waited for yet', async () => {
  const commits = createCommitSync(db, sqlite);
  await commits.transaction(insert('a'));
  expect(commits.unsynced).toBe(true);
  await commits.close();
  expect(commits.unsynced).toBe(false);
  expect(commits.flushes).toBe(1);
});

test('memory write batcher: a batch runs without savepoints; a refusal reruns it with savepoints, then guards the next batches', async () => {
  const commits = createCommitSync(db, sqlite);
  const batcher = createWriteBatcher(commits);
  const runs = new Map<string, number>();
  const job = (v: string, refuse = false) => batcher.submit(async (trx) => {
    runs.set(v, (runs.get(v) ?? 0) + 1);
    await insert(v)(trx as never);
    if (refuse) throw new Error(`refused ${v}`);
    return v;
  }, v);

  // Submitted in one turn: one batch, all succeed, each job runs once.
  expect(await Promise.all([job('a1'), job('a2'), job('a3')])).toEqual(['a1', 'a2', 'a3']);
  expect([...runs.values()]).toEqual([1, 1, 1]);

  // One refusal: the optimistic pass rolls back as a whole, the batch runs again with savepoints;
  // the refused job's row is gone, its neighbours' rows are written once.
  const mixed = await Promise.allSettled([job('b1'), job('b2', true), job('b3')]);
  expect(mixed.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect(runs.get('b1')).toBe(2);
  expect(runs.get('b2')).toBe(2);
  expect(rows()).toEqual(['a1', 'a2', 'a3', 'b1', 'b3']);

  // The next batches go straight to savepoints: each job runs once even when a neighbour is refused.
  const guarded = await Promise.allSettled([job('c1'), job('c2', true)]);
  expect(guarded.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
  expect([runs.get('c1'), runs.get('c2')]).toEqual([1, 1]);
  expect(rows()).toEqual(['a1', 'a2', 'a3', 'b1', 'b3', 'c1']);
  await commits.close();
});

test('an in-memory SQLite database has nothing to flush: plain transactions', async () => {
  const mem = new SQLite(':memory:');
  mem.exec('create table t (id integer primary key, v text not null)');
  const memDb = new Kysely<Database>({ dialect: new SqliteDialect({ database: mem }) });
  const commits = createCommitSync(memDb, mem);
  await commits.transaction(insert('a'));
  expect(commits.unsynced).toBe(false);
  await commits.durable();
  expect(commits.flushes).toBe(0);
  expect(mem.prepare('select v from t').all()).toEqual([{ v: 'a' }]);
  await memDb.destroy();
});
