/**
 * The durable job queue (src/infra/queue) on both engines: each job runs once with two workers
 * sharing the database, dedupe keys, retries with backoff to a dead letter, permanent failures,
 * a lease taken over from a stalled worker (whose late completion is then ignored), push runs.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/infra/db/database';
import { migrateToLatest } from '../src/infra/db/migrate';
import { createJobQueue, PermanentJobError, type JobQueue, type QueueJob } from '../src/infra/queue';
import { ManualClock } from '../src/lib/clock';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

let tdb: TestDatabase;
let handle: DatabaseHandle;
const clock = new ManualClock();
let n = 0;
const qname = () => `q${++n}`;

beforeAll(async () => {
  tdb = await createTestDatabase();
  handle = openDatabase({ databaseUrl: tdb.env.DATABASE_URL, dataDir: tdb.dataDir, poolMax: Number(tdb.env.DATABASE_POOL_MAX ?? 4) });
  await migrateToLatest(handle.db);
});
afterAll(async () => {
  await handle?.close();
  await tdb?.close();
});

const queue = (o: Partial<Parameters<typeof createJobQueue>[1]> = {}): JobQueue =>
  createJobQueue(handle.db, { clock, concurrency: 4, leaseMs: 60_000, maxAttempts: 3, backoffBaseMs: 1000, backoffMaxMs: 10_000, pollIntervalMs: 20, ...o });

describe('job queue', () => {
  test('two workers on one database run each of 30 jobs exactly once', async () => {
    const name = qname();
    const runs: string[] = [];
    const a = queue();
    const b = queue();
    for (const q of [a, b]) q.register(name, { run: async (job: QueueJob<{ i: number }>) => { runs.push(String(job.payload.i)); await new Promise((r) => setTimeout(r, 2)); } });
    for (let i = 0; i < 30; i++) await a.enqueue(name, { i });
    a.start();
    b.start();
    const t0 = Date.now();
    while ((await a.counts(name)).done < 30 && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 20));
    await Promise.all([a.stop(), b.stop()]);
    expect(runs.sort()).toEqual(Array.from({ length: 30 }, (_, i) => String(i)).sort());
    expect(await a.counts(name)).toEqual({ pending: 0, running: 0, done: 30, dead: 0 });
  });

  test('a dedupe key admits one job', async () => {
    const name = qname();
    const q = queue();
    const id1 = await q.enqueue(name, { x: 1 }, { dedupeKey: `${name}:k` });
    const id2 = await q.enqueue(name, { x: 2 }, { dedupeKey: `${name}:k` });
    expect(id2).toBe(id1);
    expect((await q.counts(name)).pending).toBe(1);
    expect((await q.get(`${name}:k`))?.payload).toEqual({ x: 1 });
  });

  test('failures back off (1 s, 2 s) and the last attempt dead-letters the job; onDead runs once', async () => {
    const name = qname();
    const q = queue();
    const dead: string[] = [];
    let attempts = 0;
    q.register(name, { run: async () => { attempts++; throw new Error(`boom ${attempts}`); }, onDead: async (_j, e) => { dead.push(e); } });
    await q.enqueue(name, {}, { dedupeKey: `${name}:j` });
    expect(await q.drain()).toBe(1);
    expect(await q.get(`${name}:j`)).toMatchObject({ state: 'pending', attempts: 1, lastError: 'boom 1', runAt: clock.now() + 1000 });
    expect(await q.drain()).toBe(0); // not due yet
    clock.advance(1000);
    await q.drain();
    expect(await q.get(`${name}:j`)).toMatchObject({ state: 'pending', attempts: 2, runAt: clock.now() + 2000 });
    clock.advance(2000);
    await q.drain();
    expect(await q.get(`${name}:j`)).toMatchObject({ state: 'dead', attempts: 3, lastError: 'boom 3' });
    expect(dead).toEqual(['boom 3']);
    clock.advance(60_000);
    expect(await q.drain()).toBe(0);
  });

  test('a PermanentJobError dead-letters at once', async () => {
    const name = qname();
    const q = queue();
    q.register(name, { run: async () => { throw new PermanentJobError('no point retrying'); } });
    await q.enqueue(name, {}, { dedupeKey: `${name}:p` });
    await q.drain();
    expect(await q.get(`${name}:p`)).toMatchObject({ state: 'dead', attempts: 1, lastError: 'no point retrying' });
  });

  test('a stalled worker loses its job when the lease ends; its late completion changes nothing', async () => {
    const name = qname();
    let release!: () => void;
    const stalled = queue();
    stalled.register(name, { run: () => new Promise<void>((r) => (release = r)) });
    const other = queue();
    let ran = 0;
    other.register(name, { run: async () => { ran++; } });
    await stalled.enqueue(name, {}, { dedupeKey: `${name}:l` });
    const hung = stalled.drain();
    // Claimed and running (polled: a fixed pause could end before the claim on a loaded machine).
    for (let i = 0; i < 200 && (await stalled.get(`${name}:l`))?.state !== 'running'; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await stalled.get(`${name}:l`)).toMatchObject({ state: 'running', attempts: 1 });
    expect(await other.drain()).toBe(0); // leased
    clock.advance(60_001);
    expect(await other.drain()).toBe(1);
    expect(ran).toBe(1);
    expect(await other.get(`${name}:l`)).toMatchObject({ state: 'done', attempts: 2 });
    release();
    await hung;
    expect(await other.get(`${name}:l`)).toMatchObject({ state: 'done', attempts: 2 });
  });

  test('runByKey (push delivery): runs a pending job now, then reports it terminal; unknown keys are missing', async () => {
    const name = qname();
    const q = queue();
    let ran = 0;
    q.register(name, { run: async () => { ran++; } });
    await q.enqueue(name, {}, { dedupeKey: `${name}:r`, runAt: clock.now() + 3_600_000 });
    expect(await q.runByKey(`${name}:r`)).toMatchObject({ outcome: 'ran', state: 'done' });
    expect(await q.runByKey(`${name}:r`)).toMatchObject({ outcome: 'terminal', state: 'done' });
    expect(await q.runByKey('nope')).toEqual({ outcome: 'missing' });
    expect(ran).toBe(1);
  });
});
