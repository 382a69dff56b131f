import type { Kysely } from 'kysely';
import { afterAll, describe, expect, test } from 'vitest';
import type { DatabaseHandle } from '../src/infra/db/database';
import type { Database } from '../src/infra/db/schema';
import { ManualClock } from '../src/lib/clock';
import { credits as cr } from '../src/lib/money';
import type { Metering } from '../src/modules/billing/metering';
import { testEngine } from './helpers/engines';
import { agent, openRigDatabase, rigOn, serverPostgres, startRig } from './billing-support';
import { billingModuleFor } from '../src/modules/billing/module';
import { startTestApp } from './helpers/harness';

type ChargeFn = (a: string) => Promise<{ free: boolean }>;
/** Charges through `charge()` (billing's own group-committed transaction). */
const standalone = (m: Metering): ChargeFn => (a) => m.charge(a, 'search');
/** Charges inside a caller's own transaction (`chargeWithin`), as memory writes do. */
const withinCaller = (m: Metering, db: Kysely<Database>): ChargeFn => (a) =>
  db.transaction().execute(async (trx) => {
    const c = await m.chargeWithin(trx, a, 'search', { tier: 'free' });
    await trx.insertInto('metering_daily').values({ agent_id: a, pool: 'caller_write', day: c.chargeId, count: 1 }).execute();
    return c;
  });

/**
 * 100 parallel charges at the floor boundary: 45 of 50 free searches used and credit for exactly
 * k = 7 paid ones. Exactly 5 + 7 may pass; the balance ends at 0, never below.
 */
async function boundary(charges: ChargeFn[], seed: { addCredit: (a: string) => Promise<void>; balance: (a: string) => Promise<number>; ledger: (a: string) => Promise<number> }) {
  const a = agent();
  await Promise.all(Array.from({ length: 45 }, (_, i) => charges[i % charges.length](a)));
  await seed.addCredit(a);
  const results = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => charges[i % charges.length](a)));
  const ok = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<any>).value);
  const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
  expect(ok.filter((c) => c.free)).toHaveLength(5);
  expect(ok.filter((c) => !c.free)).toHaveLength(7);
  expect(refused).toHaveLength(88);
  for (const e of refused) expect(e.code).toBe('INSUFFICIENT_CREDITS');
  expect(await seed.balance(a)).toBe(0);
  expect(await seed.ledger(a)).toBe(0);
}

describe(`concurrency at the boundary (${testEngine()})`, () => {
  test('one instance: never more than k through, never below zero', async () => {
    const r = await startRig();
    try {
      await boundary([standalone(r.metering)], {
        addCredit: async (a) => void (await r.credits.add(a, { kind: 'purchase', units: cr(14), ref: `c:${a}` })),
        balance: async (a) => (await r.credits.balance(a)).units,
        ledger: (a) => r.credits.ledgerBalance(a),
      });
    } finally {
      await r.close();
    }
  });

  test('one instance, charges inside the callers\' transactions: same guarantees, and each caller\'s write commits with its charge', async () => {
    const r = await startRig();
    try {
      const seed = {
        addCredit: async (a: string) => void (await r.credits.add(a, { kind: 'purchase', units: cr(14), ref: `c:${a}` })),
        balance: async (a: string) => (await r.credits.balance(a)).units,
        ledger: (a: string) => r.credits.ledgerBalance(a),
      };
      await boundary([withinCaller(r.metering, r.handle.db)], seed);
      // A caller whose own write then fails takes its charge back with it (one transaction).
      const a = agent();
      await seed.addCredit(a);
      for (let i = 0; i < 50; i++) await r.metering.charge(a, 'search');
      await expect(r.handle.db.transaction().execute(async (trx) => {
        await r.metering.chargeWithin(trx, a, 'search', { tier: 'free' });
        throw new Error('caller failed');
      })).rejects.toThrow('caller failed');
      expect(await seed.balance(a)).toBe(cr(14));
      expect(await seed.ledger(a)).toBe(cr(14));
      expect((await r.metering.charge(a, 'search')).free).toBe(false);
      expect(await seed.balance(a)).toBe(cr(12));
    } finally {
      await r.close();
    }
  });

  const several = testEngine() === 'postgres' ? test : test.skip; // SQLite is one instance by design
  const handles: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const h of handles.reverse()) await h.close();
  });
  several('three svc instances (own pools) on one PostgreSQL server database', async () => {
    const server = await serverPostgres();
    expect(server, 'a PostgreSQL server on 127.0.0.1:5432 or SVC_TEST_PG is required').toBeDefined();
    handles.push(server!);
    const clock = new ManualClock();
    const instances: (ReturnType<typeof rigOn> & { handle: DatabaseHandle })[] = [];
    for (let i = 0; i < 3; i++) {
      const { handle } = await openRigDatabase(server, 5);
      handles.push(handle);
      instances.push({ ...rigOn(handle, clock), handle });
    }
    await boundary(instances.map((x) => standalone(x.metering)), {
      addCredit: async (a) => void (await instances[1].credits.add(a, { kind: 'purchase', units: cr(14), ref: `c:${a}` })),
      balance: async (a) => (await instances[2].credits.balance(a)).units,
      ledger: (a) => instances[0].credits.ledgerBalance(a),
    });
    // The same with every charge inside its caller's transaction (memory writes), mixed with standalone ones.
    await boundary(instances.map((x, i) => (i === 1 ? standalone(x.metering) : withinCaller(x.metering, x.handle.db))), {
      addCredit: async (a) => void (await instances[0].credits.add(a, { kind: 'purchase', units: cr(14), ref: `c:${a}` })),
      balance: async (a) => (await instances[1].credits.balance(a)).units,
      ledger: (a) => instances[2].credits.ledgerBalance(a),
    });
    // Duplicate grants from several instances at once: exactly one lands.
    const a = agent();
    const adds = await Promise.all(instances.flatMap((x) => [1, 2, 3].map(() => x.credits.add(a, { kind: 'purchase', units: cr(5), ref: `dup:${a}` }))));
    expect(adds.filter((x) => x.added)).toHaveLength(1);
    expect((await instances[0].credits.balance(a)).units).toBe(cr(5));
  });
});

describe(`memory writes at the floor boundary, over HTTP (${testEngine()})`, () => {
  test('100 parallel PUTs with 995 of 1,000 free writes used and credit for 7: exactly 12 written, 88 refused with 402, balance 0', async () => {
    const t = await startTestApp({ env: { SVC_MEMORY_RATE_PER_MINUTE: '0' } });
    try {
      const a = await t.registerAgent();
      const billing = billingModuleFor(t.config)!;
      for (let i = 0; i < 995; i += 50) {
        await Promise.all(Array.from({ length: Math.min(50, 995 - i) }, () => billing.metering.charge(a.agentId, 'memory_write', { tier: 'free' })));
      }
      await billing.credits.add(a.agentId, { kind: 'grant', units: cr(7), ref: `c:${a.agentId}`, expiresAt: null });
      const res = await Promise.all(Array.from({ length: 100 }, (_, i) => t.request('PUT', `/v1/memory/k${i}`, { token: a.apiKey, body: { value: { i } } })));
      const ok = res.filter((r) => r.status === 200);
      const refused = res.filter((r) => r.status !== 200);
      expect(ok).toHaveLength(12);
      expect(refused).toHaveLength(88);
      for (const r of refused) expect(r.body.error_code).toBe('INSUFFICIENT_CREDITS');
      // The last paid write saw the balance at zero; every successful answer carries billing's usage.
      for (const r of ok) expect(r.body._svc.usage.credits_remaining_usd).toMatch(/^\d+\.\d{4}$/);
      expect((await billing.credits.balance(a.agentId)).units).toBe(0);
      expect(await billing.credits.ledgerBalance(a.agentId)).toBe(0);
      const list = await t.request('GET', '/v1/memory?per_page=100', { token: a.apiKey });
      expect(list.body.total).toBe(12);
      expect(new Set(list.body.keys.map((k: { key: string }) => k.key))).toEqual(new Set(ok.map((r) => r.body.key)));
    } finally {
      await t.close();
    }
  });
});
