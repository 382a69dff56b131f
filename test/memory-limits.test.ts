import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildApp, type App } from '../src/app';
import { loadConfig } from '../src/config';
import { ApiError } from '../src/http/errors';
import { ManualClock } from '../src/lib/clock';
import { TIERS } from '../src/lib/tiers';
import type { MemoryMeter } from '../src/modules/memory/ports';
import { createMemoryService } from '../src/modules/memory/service';
import { createMemoryStore } from '../src/modules/memory/store';
import { utcMonth } from '../src/lib/utc';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

/**
 * Caps, rate limit, sweeper and the meter port. The app is built here rather than through the
 * harness to reach its database: tests move an agent to a tier and fill its month's counter instead
 * of making thousands of writes. (PGlite has one connection: the test uses the app's own handle.)
 */
let tdb: TestDatabase;
let built: App;
const clock = new ManualClock();
let n = 0;

async function request(method: 'GET' | 'PUT' | 'DELETE', url: string, token: string, body?: unknown) {
  const res = await built.app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}
async function agent(tier = 'free'): Promise<{ token: string; id: string }> {
  const res = await built.app.inject({ method: 'POST', url: '/v1/register', payload: { agent_name: `lim-${process.pid}-${++n}`, owner_identifier: `o${n}`, agree_to_terms: true } });
  const { api_key, agent_id } = res.json();
  await built.database.db.updateTable('agents').set({ tier }).where('agent_id', '=', agent_id).execute();
  return { token: api_key, id: agent_id };
}
const setWrites = (agentId: string, writes: number) =>
  built.database.db.insertInto('memory_usage').values({ agent_id: agentId, month: utcMonth(clock.now()), writes, searches: 0 })
    .onConflict((oc) => oc.columns(['agent_id', 'month']).doUpdateSet({ writes })).execute();

beforeAll(async () => {
  tdb = await createTestDatabase();
  const config = loadConfig({
    LOG_LEVEL: 'silent', PORT: '0', ...tdb.env, SVC_EMBEDDINGS: 'none', SVC_MEMORY_RATE_PER_MINUTE: '20', SVC_MEMORY_SWEEP_INTERVAL_SECONDS: '1',
  });
  built = await buildApp({ config, clock, logger: false });
});
afterAll(async () => {
  await built?.app.close();
  await tdb?.close();
});

describe('monthly write cap (tier table)', () => {
  test('at the cap: 429 MEMORY_OPS_LIMIT with upgrade_url; nothing written; reads and deletes still work', async () => {
    const cap = TIERS.starter.memoryWritesPerMonth!;
    const s = await agent('starter');
    await setWrites(s.id, cap - 1);
    const last = await request('PUT', '/v1/memory/last', s.token, { value: 'the last one' });
    expect(last.status).toBe(200);
    expect(last.body.usage).toMatchObject({ ops_this_month: cap, ops_remaining: 0, over_limit: true });
    const over = await request('PUT', '/v1/memory/over', s.token, { value: 'refused' });
    expect(over.status).toBe(429);
    expect(over.body.error_code).toBe('MEMORY_OPS_LIMIT');
    expect(over.body.upgrade_url).toMatch(/^http/);
    expect((await request('GET', '/v1/memory/over', s.token)).status).toBe(404);
    expect((await request('GET', '/v1/memory/last', s.token)).status).toBe(200);
    expect((await request('GET', '/v1/memory', s.token)).status).toBe(200);
    expect((await request('DELETE', '/v1/memory/last', s.token)).status).toBe(200);
    expect((await request('GET', '/v1/memory/stats', s.token)).body).toMatchObject({ tier: 'starter', ops_this_month: cap, ops_remaining: 0 });
  });

  test('the cap is per UTC month: the next month starts from zero', async () => {
    const s = await agent('starter');
    await setWrites(s.id, TIERS.starter.memoryWritesPerMonth!);
    expect((await request('PUT', '/v1/memory/k', s.token, { value: 1 })).status).toBe(429);
    const now = new Date(clock.now());
    clock.set(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1, 0, 0, 0));
    const ok = await request('PUT', '/v1/memory/k', s.token, { value: 1 });
    expect(ok.status).toBe(200);
    expect(ok.body.usage.ops_this_month).toBe(1);
  });

  test('a tier without a cap (pro) is never refused for writes; ops_remaining is null', async () => {
    const p = await agent('pro');
    await setWrites(p.id, 1_000_000);
    const res = await request('PUT', '/v1/memory/k', p.token, { value: 1 });
    expect(res.status).toBe(200);
    expect(res.body.usage.ops_remaining).toBeNull();
  });
});

describe('caps under concurrency (writes share group-commit transactions)', () => {
  test('10 concurrent PUTs with 3 writes left: exactly 3 succeed, 7 get 429, every success reads back', async () => {
    const s = await agent('starter');
    const cap = TIERS.starter.memoryWritesPerMonth!;
    await setWrites(s.id, cap - 3);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => request('PUT', `/v1/memory/c${i}`, s.token, { value: i })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.filter((r) => r.status === 429 && r.body.error_code === 'MEMORY_OPS_LIMIT')).toHaveLength(7);
    for (let i = 0; i < 10; i++) {
      expect((await request('GET', `/v1/memory/c${i}`, s.token)).status).toBe(results[i].status === 200 ? 200 : 404);
    }
    clock.advanceSeconds(60); // past this minute's rate limit (20 per minute here)
    expect((await request('GET', '/v1/memory/stats', s.token)).body.ops_this_month).toBe(cap);
  });

  test('concurrent large PUTs near the storage cap: the ones that fit are kept, storage never passes the cap', async () => {
    const f = await agent('free');
    const limit = TIERS.free.memoryStorageBytes;
    const chunk = 500 * 1024;
    const results = await Promise.all(Array.from({ length: 14 }, (_, i) => request('PUT', `/v1/memory/big${i}`, f.token, { value: 'z'.repeat(chunk) })));
    const ok = results.filter((r) => r.status === 200).length;
    clock.advanceSeconds(60);
    expect(ok).toBe(Math.floor(limit / (chunk + 2)));
    expect(results.filter((r) => r.status === 413 && r.body.error_code === 'MEMORY_STORAGE_LIMIT')).toHaveLength(14 - ok);
    const stats = await request('GET', '/v1/memory/stats', f.token);
    expect(stats.body.storage_bytes).toBe(ok * (chunk + 2));
    expect((await request('GET', '/v1/memory', f.token)).body.total).toBe(ok);
  });
});

describe('storage cap on latest live bytes', () => {
  test('413 MEMORY_STORAGE_LIMIT past the tier cap; replacing or deleting frees room', async () => {
    const f = await agent('free');
    const limit = TIERS.free.memoryStorageBytes;
    const chunk = 500 * 1024; // under the 512 KB value limit
    const per = chunk + 2;
    const fit = Math.floor(limit / per);
    for (let i = 0; i < fit; i++) expect((await request('PUT', `/v1/memory/c${i}`, f.token, { value: 'x'.repeat(chunk) })).status).toBe(200);
    const over = await request('PUT', '/v1/memory/one-more', f.token, { value: 'x'.repeat(chunk) });
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ error_code: 'MEMORY_STORAGE_LIMIT', storage_limit_bytes: limit });
    expect(over.body.upgrade_url).toBeTruthy();
    // Replacing a value counts only the new size (history is not billed).
    expect((await request('PUT', '/v1/memory/c0', f.token, { value: 'y'.repeat(chunk) })).status).toBe(200);
    expect((await request('PUT', '/v1/memory/c0', f.token, { value: 'small' })).status).toBe(200);
    expect((await request('PUT', '/v1/memory/one-more', f.token, { value: 'x'.repeat(chunk) })).status).toBe(200);
    const stats = await request('GET', '/v1/memory/stats', f.token);
    expect(stats.body.storage_bytes).toBe(fit * per + 7);
    expect(stats.body.storage_bytes).toBeLessThanOrEqual(limit);
  });
});

describe('per-minute rate limit', () => {
  test('past the limit: 429 RATE_LIMIT_EXCEEDED with Retry-After; the next minute is open again', async () => {
    const r = await agent('free');
    const minuteStart = clock.now() - (clock.now() % 60_000);
    clock.set(minuteStart + 15_000);
    for (let i = 0; i < 20; i++) expect((await request('GET', '/v1/memory/stats', r.token)).status).toBe(200);
    const limited = await request('PUT', '/v1/memory/k', r.token, { value: 1 });
    expect(limited.status).toBe(429);
    expect(limited.body.error_code).toBe('RATE_LIMIT_EXCEEDED');
    expect(limited.headers['retry-after']).toBe('45');
    expect(limited.body.upgrade_url).toMatch(/^http/);
    expect((await request('GET', '/v1/memory/k', r.token)).status).toBe(429);
    // Another agent has its own budget.
    const other = await agent('free');
    expect((await request('GET', '/v1/memory/stats', other.token)).status).toBe(200);
    clock.advanceSeconds(45);
    expect((await request('PUT', '/v1/memory/k', r.token, { value: 1 })).status).toBe(200);
  });
});

describe('sweeper', () => {
  test('expired entries are swept in the background: state expired, counter released', async () => {
    const e = await agent('free');
    await request('PUT', '/v1/memory/tmp', e.token, { value: 'temporary', ttl: 5 });
    clock.advanceSeconds(6);
    const deadline = Date.now() + 5000;
    let row;
    do {
      await new Promise((r) => setTimeout(r, 200));
      row = await built.database.db.selectFrom('memory_heads').select(['state', 'size_bytes']).where('agent_id', '=', e.id).where('key', '=', 'tmp').executeTakeFirst();
    } while (row?.state !== 'expired' && Date.now() < deadline);
    expect(row).toEqual({ state: 'expired', size_bytes: 0 });
    const counter = await built.database.db.selectFrom('memory_agents').select('storage_bytes').where('agent_id', '=', e.id).executeTakeFirstOrThrow();
    expect(Number(counter.storage_bytes)).toBe(0);
    // The ledger keeps the version.
    const versions = await built.database.db.selectFrom('memory_versions').select('version').where('agent_id', '=', e.id).execute();
    expect(versions).toHaveLength(1);
  });
});

describe('meter port (billing)', () => {
  /**
   * A credit balance with the port's contract: the charge is written inside the write's transaction
   * (a row in metering_daily here), 402 when empty; committed() runs only after the commit.
   */
  function creditMeter(balance: number) {
    const state = { balance, charges: 0, committed: 0 };
    const meter: MemoryMeter = {
      async chargeWrite(trx, agentId) {
        if (state.balance <= 0) throw new ApiError(402, 'INSUFFICIENT_CREDITS', 'no credit left', { upgrade_url: 'x' });
        await trx.insertInto('metering_daily').values({ agent_id: agentId, pool: 'test_charge', day: 'd', count: 1 })
          .onConflict((oc) => oc.columns(['agent_id', 'pool', 'day']).doUpdateSet({ count: sql`metering_daily.count + 1` })).execute();
        state.balance--;
        state.charges++;
        return { committed: async () => { state.committed++; return { credits_remaining_usd: String(state.balance) }; } };
      },
    };
    return { meter, state };
  }
  const chargedRows = async (agentId: string) => Number((await built.database.db.selectFrom('metering_daily').select('count')
    .where('agent_id', '=', agentId).where('pool', '=', 'test_charge').executeTakeFirst())?.count ?? 0);

  test('charged inside the write after validation and limits; rolled back with a failed write; 402 passes through', async () => {
    const a = await agent('starter');
    const { meter, state } = creditMeter(3);
    const svc = createMemoryService({ store: createMemoryStore(built.database), clock, upgradeUrl: 'u', meter });
    const caller = { agentId: a.id, tier: 'starter' };
    const ok = await svc.put(caller, 'one', { value: 1 });
    expect(ok.svcUsage).toEqual({ credits_remaining_usd: '2' });
    expect(state).toMatchObject({ charges: 1, committed: 1 });
    expect(await chargedRows(a.id)).toBe(1);
    // Too large: refused before any charge.
    await expect(svc.put(caller, 'big', { value: 'x'.repeat(600 * 1024) })).rejects.toMatchObject({ code: 'MEMORY_VALUE_TOO_LARGE' });
    expect(state.charges).toBe(1);
    // At the cap: refused before any charge.
    await setWrites(a.id, TIERS.starter.memoryWritesPerMonth!);
    await expect(svc.put(caller, 'capped', { value: 1 })).rejects.toMatchObject({ code: 'MEMORY_OPS_LIMIT' });
    expect(state.charges).toBe(1);
    await setWrites(a.id, 0);
    // The write fails after the charge (inside the same transaction): the charge rolls back with it.
    const broken = createMemoryService({
      store: createMemoryStore(built.database), clock, upgradeUrl: 'u', meter,
      semantic: {
        unavailableReason: () => undefined, forget: async () => {}, nearest: async () => ({ pending: 0, ranked: async () => [] }),
        indexWrite: async () => { throw new Error('disk full'); },
      },
    });
    await expect(broken.put(caller, 'x', { value: 1 })).rejects.toThrow('disk full');
    expect(state.charges).toBe(2);
    expect(await chargedRows(a.id)).toBe(1);
    expect(state.committed).toBe(1);
    await expect(svc.get(caller, 'x')).rejects.toMatchObject({ code: 'MEMORY_KEY_NOT_FOUND' });
    // Out of credit: 402 INSUFFICIENT_CREDITS, nothing written.
    state.balance = 0;
    await expect(svc.put(caller, 'poor', { value: 1 })).rejects.toMatchObject({ status: 402, code: 'INSUFFICIENT_CREDITS' });
    await expect(svc.get(caller, 'poor')).rejects.toMatchObject({ code: 'MEMORY_KEY_NOT_FOUND' });
    expect(await chargedRows(a.id)).toBe(1);
  });
});

describe('reads never see an open write transaction', () => {
  test('a GET issued while a write is in flight answers from committed data only (the write then rolls back)', async () => {
    const a = await agent('starter');
    const store = createMemoryStore(built.database);
    const svc = createMemoryService({ store, clock, upgradeUrl: 'u' });
    const caller = { agentId: a.id, tier: 'starter' };
    await svc.put(caller, 'k', { value: 'committed' });
    let pending: Promise<string> | undefined;
    await expect(built.database.db.transaction().execute(async (trx) => {
      await trx.updateTable('memory_versions').set({ value: JSON.stringify('uncommitted') })
        .where('agent_id', '=', a.id).where('key', '=', 'k').execute();
      // Issued while this transaction is open and has changed the row.
      pending = svc.get(caller, 'k');
      await new Promise((r) => setTimeout(r, 20));
      throw new Error('roll back');
    })).rejects.toThrow('roll back');
    expect(JSON.parse((await pending)!)).toMatchObject({ value: 'committed' });
    expect(JSON.parse(await svc.get(caller, 'k'))).toMatchObject({ value: 'committed' });
  });
});
