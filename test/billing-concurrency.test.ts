import { afterAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../src/lib/clock';
import { credits as cr } from '../src/lib/money';
import type { Metering } from '../src/modules/billing/metering';
import { testEngine } from './helpers/engines';
import { agent, openRigDatabase, rigOn, serverPostgres, startRig } from './billing-support';

/**
 * 100 parallel charges at the floor boundary: 45 of 50 free searches used and credit for exactly
 * k = 7 paid ones. Exactly 5 + 7 may pass; the balance ends at 0, never below.
 */
async function boundary(meterings: Metering[], seed: { addCredit: (a: string) => Promise<void>; balance: (a: string) => Promise<number>; ledger: (a: string) => Promise<number> }) {
  const a = agent();
  await Promise.all(Array.from({ length: 45 }, (_, i) => meterings[i % meterings.length].charge(a, 'search')));
  await seed.addCredit(a);
  const results = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => meterings[i % meterings.length].charge(a, 'search')));
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
      await boundary([r.metering], {
        addCredit: async (a) => void (await r.credits.add(a, { kind: 'purchase', units: cr(14), ref: `c:${a}` })),
        balance: async (a) => (await r.credits.balance(a)).units,
        ledger: (a) => r.credits.ledgerBalance(a),
      });
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
    const instances: ReturnType<typeof rigOn>[] = [];
    for (let i = 0; i < 3; i++) {
      const { handle } = await openRigDatabase(server, 5);
      handles.push(handle);
      instances.push(rigOn(handle, clock));
    }
    await boundary(instances.map((x) => x.metering), {
      addCredit: async (a) => void (await instances[1].credits.add(a, { kind: 'purchase', units: cr(14), ref: `c:${a}` })),
      balance: async (a) => (await instances[2].credits.balance(a)).units,
      ledger: (a) => instances[0].credits.ledgerBalance(a),
    });
    // Duplicate grants from several instances at once: exactly one lands.
    const a = agent();
    const adds = await Promise.all(instances.flatMap((x) => [1, 2, 3].map(() => x.credits.add(a, { kind: 'purchase', units: cr(5), ref: `dup:${a}` }))));
    expect(adds.filter((x) => x.added)).toHaveLength(1);
    expect((await instances[0].credits.balance(a)).units).toBe(cr(5));
  });
});
