/**
 * Writers of one agent racing on two instances of one database: PUT against DELETE, DELETEs against
 * each other, and the expiry sweep against PUTs that rewrite expired keys. Each instance is a memory
 * store on its own connection pool (what two svc processes have). On PostgreSQL this needs a server
 * (127.0.0.1:5432 or SVC_TEST_PG): PGlite is one session, where nothing can interleave. On SQLite it
 * runs on one database file with one store, since svc runs SQLite as one instance.
 *
 * What these pin: a DELETE reading the head without the agent's writer lock (the same version
 * twice: duplicate key, deadlocks, 500s), and the sweep marking keys expired that a PUT had just
 * rewritten (acknowledged writes lost, storage_bytes negative).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { DatabaseHandle } from '../src/infra/db/database';
import { createMemoryStore, type NewVersion } from '../src/modules/memory/store';
import { openRigDatabase, serverPostgres } from './billing-support';
import { testEngine, type TestDatabase } from './helpers/engines';

const PG = testEngine() === 'postgres';
const server: TestDatabase | undefined = PG ? await serverPostgres() : undefined;
if (PG && !server) console.warn('!! SKIPPED memory races across instances: no PostgreSQL server at 127.0.0.1:5432 (or SVC_TEST_PG)');
const run = PG && !server ? test.skip : test;

const handles: DatabaseHandle[] = [];
let stores: ReturnType<typeof createMemoryStore>[];
let test0: TestDatabase | undefined;
beforeAll(async () => {
  if (PG && !server) return;
  const first = await openRigDatabase(server, 10);
  test0 = first.test;
  handles.push(first.handle);
  if (PG) handles.push((await openRigDatabase(server, 10)).handle);
  stores = handles.map((h) => createMemoryStore(h));
});
afterAll(async () => {
  for (const h of handles) await h.close();
  await test0?.close();
});

const MONTH = '2026-11';
const T0 = Date.UTC(2026, 10, 25, 12);
let n = 0;
const version = (agentId: string, key: string, value: string, now: number, expiresAt: number | null = null): NewVersion => ({
  agentId, key, value, sizeBytes: Buffer.byteLength(value), importance: 'normal', importanceRank: 2, source: null, confidence: 1,
  derivedStart: null, derivedEnd: null, expiresAt, now,
});
const put = (i: number, v: NewVersion) => stores[i % stores.length].put(v, MONTH, null, () => {});
const remove = (i: number, agentId: string, key: string, now: number) => stores[i % stores.length].remove(agentId, key, now);

/** Storage and live keys kept by the counters agree with the live heads themselves. */
async function consistent(agentId: string, now: number) {
  const db = handles[0].db;
  const heads = await db.selectFrom('memory_heads').select(['size_bytes', 'state', 'expires_at']).where('agent_id', '=', agentId).execute();
  const live = heads.filter((h) => h.state === 'live');
  const agent = await db.selectFrom('memory_agents').select(['storage_bytes', 'live_keys']).where('agent_id', '=', agentId).executeTakeFirst();
  expect(Number(agent?.storage_bytes ?? 0)).toBe(live.reduce((s, h) => s + Number(h.size_bytes), 0));
  expect(Number(agent?.live_keys ?? 0)).toBe(live.length);
  const counters = await stores[0].counters(agentId, MONTH, now);
  expect(counters.storageBytes).toBeGreaterThanOrEqual(0);
}

describe(`memory writers racing across instances (${testEngine()}${PG ? ', PostgreSQL server' : ''})`, () => {
  run('a DELETE racing a PUT of the same key, and DELETEs racing each other: no error, one winner, counters exact', async () => {
    const agent = `race-del-${++n}`;
    for (let k = 0; k < 30; k++) await put(0, version(agent, `k${k}`, `first value ${k}`, T0));
    const results = await Promise.allSettled(Array.from({ length: 30 }, (_, k) => Promise.all([
      remove(0, agent, `k${k}`, T0 + 1),
      put(1, version(agent, `k${k}`, `second value ${k}`, T0 + 1)),
      remove(1, agent, `k${k}`, T0 + 1),
    ])));
    const failed = results.filter((r) => r.status === 'rejected');
    expect(failed.map((r) => String((r as PromiseRejectedResult).reason)).slice(0, 3)).toEqual([]);
    // Versions never repeat: every write appended its own.
    const versions = await handles[0].db.selectFrom('memory_versions').select(['key', 'version']).where('agent_id', '=', agent).execute();
    expect(new Set(versions.map((v) => `${v.key}#${v.version}`)).size).toBe(versions.length);
    await consistent(agent, T0 + 2);
    // Four DELETEs of one live key: exactly one removes it.
    for (let k = 0; k < 10; k++) {
      await put(0, version(agent, `d${k}`, 'to delete', T0 + 3));
      const removed = await Promise.all([0, 1, 2, 3].map((i) => remove(i, agent, `d${k}`, T0 + 4)));
      expect(removed.filter(Boolean)).toHaveLength(1);
    }
    await consistent(agent, T0 + 5);
  });

  run('the expiry sweep racing PUTs that rewrite the expired keys: every acknowledged PUT stays, storage never goes negative', async () => {
    const agents = [`race-ttl-${++n}`, `race-ttl-${++n}`, `race-ttl-${++n}`];
    for (const agent of agents) for (let k = 0; k < 40; k++) await put(0, version(agent, `t${k}`, `short-lived ${k}`, T0, T0 + 1000));
    const later = T0 + 5000;
    const sweeps = (async () => {
      let swept = 0;
      for (let i = 0; i < 40; i++) swept += await stores[stores.length - 1].sweepExpired(later, 7);
      return swept;
    })();
    const rewrites = agents.flatMap((agent) => Array.from({ length: 40 }, (_, k) => put(k, version(agent, `t${k}`, `rewritten ${k}`, later))));
    await Promise.all([sweeps, ...rewrites]);
    while ((await stores[0].sweepExpired(later, 100)) > 0);
    for (const agent of agents) {
      const rows = await handles[0].db.selectFrom('memory_heads').select(['key', 'state', 'expires_at']).where('agent_id', '=', agent).execute();
      expect(rows.filter((r) => r.state === 'live' && r.expires_at === null)).toHaveLength(40);
      for (let k = 0; k < 40; k++) expect((await stores[0].get(agent, `t${k}`, later))?.value, `${agent} t${k}`).toBe(`rewritten ${k}`);
      await consistent(agent, later);
    }
  });
});
