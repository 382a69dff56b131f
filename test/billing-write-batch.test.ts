/**
 * Charges made inside a memory write batch (createWriteBatcher): the batch's transaction scope lets
 * the charges of one agent share one account lock and write their lot and day-counter updates once,
 * at the end of the batch or of each job's savepoint (infra/db/trx-scope.ts, billing/metering.ts).
 * These tests hold that sharing to the same guarantees as one lock per charge: exact at the credit
 * and quota boundaries, and nothing of a rolled-back job left behind.
 */
import { describe, expect, test } from 'vitest';
import { sql } from 'kysely';
import { credits as cr } from '../src/lib/money';
import type { MeteredAction } from '../src/modules/billing/metering';
import { createWriteBatcher } from '../src/infra/db/write-batcher';
import { testEngine } from './helpers/engines';
import { agent, startRig, type BillingRig } from './billing-support';

/** Calls counted for an agent's pool today (metering_daily). */
async function counted(r: BillingRig, a: string, pool: string): Promise<number> {
  const row = await r.handle.db.selectFrom('metering_daily').select(sql<number>`coalesce(sum(count), 0)`.as('n'))
    .where('agent_id', '=', a).where('pool', '=', pool).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Submits `n` jobs to one batcher in the same turn (so they share batches), each charging `a` and writing a marker row. */
function chargeInBatch(r: BillingRig, a: string, n: number, opts: { action?: MeteredAction; tier?: string; failAt?: number[] } = {}) {
  const batcher = createWriteBatcher(r.handle.commits);
  return Promise.allSettled(Array.from({ length: n }, (_, i) => batcher.submit(async (trx) => {
    const c = await r.metering.chargeWithin(trx, a, opts.action ?? 'search', { tier: opts.tier ?? 'free' });
    await trx.insertInto('metering_daily').values({ agent_id: a, pool: 'marker', day: `job-${i}`, count: 1 }).execute();
    // The caller's own write fails after its charge: the charge must go with it.
    if (opts.failAt?.includes(i)) throw new Error(`job ${i} failed after its charge`);
    return c;
  }, a)));
}

describe(`charges inside a memory write batch (${testEngine()})`, () => {
  test('100 charges of one agent at the floor boundary with credit for exactly 7: 5 free + 7 paid, balance 0, ledger and counters agree', async () => {
    const r = await startRig();
    try {
      const a = agent();
      for (let i = 0; i < 45; i++) await r.metering.charge(a, 'search');
      await r.credits.add(a, { kind: 'purchase', units: cr(14), ref: `c:${a}` });
      const results = await chargeInBatch(r, a, 100);
      const ok = results.filter((x) => x.status === 'fulfilled').map((x) => (x as PromiseFulfilledResult<{ free: boolean }>).value);
      const refused = results.filter((x) => x.status === 'rejected').map((x) => (x as PromiseRejectedResult).reason as { code?: string });
      expect(ok.filter((c) => c.free)).toHaveLength(5);
      expect(ok.filter((c) => !c.free)).toHaveLength(7);
      expect(refused.map((e) => e.code)).toEqual(Array(88).fill('INSUFFICIENT_CREDITS'));
      expect((await r.credits.balance(a)).units).toBe(0);
      expect(await r.credits.ledgerBalance(a)).toBe(0);
      expect(await counted(r, a, 'search')).toBe(57);
      expect(await counted(r, a, 'marker')).toBe(12);
    } finally {
      await r.close();
    }
  });

  test('jobs that fail after their charge take it back; the others of the batch keep theirs, and later charges see it all', async () => {
    const r = await startRig();
    try {
      const a = agent();
      for (let i = 0; i < 50; i++) await r.metering.charge(a, 'search');
      await r.credits.add(a, { kind: 'purchase', units: cr(40), ref: `c:${a}` });
      const results = await chargeInBatch(r, a, 10, { failAt: [3, 7] });
      expect(results.map((x) => x.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      // 8 paid searches of 2 credits each.
      expect((await r.credits.balance(a)).units).toBe(cr(24));
      expect(await r.credits.ledgerBalance(a)).toBe(cr(24));
      expect(await counted(r, a, 'search')).toBe(58);
      expect(await counted(r, a, 'marker')).toBe(8);
      // A charge outside the batch decides on the committed state, not on what was rolled back.
      expect((await r.metering.charge(a, 'search')).free).toBe(false);
      expect((await r.credits.balance(a)).units).toBe(cr(22));
      expect(await r.credits.ledgerBalance(a)).toBe(cr(22));
    } finally {
      await r.close();
    }
  });

  test('a monthly quota counts the calls of the same batch that are not written yet: 2 left, 5 asked, 2 through', async () => {
    const r = await startRig();
    try {
      const a = agent();
      // starter: 200 browses per UTC month.
      for (let i = 0; i < 198; i++) await r.metering.charge(a, 'browse_static', { tier: 'starter' });
      const results = await chargeInBatch(r, a, 5, { action: 'browse_static', tier: 'starter' });
      expect(results.filter((x) => x.status === 'fulfilled')).toHaveLength(2);
      const refused = results.filter((x) => x.status === 'rejected').map((x) => (x as PromiseRejectedResult).reason as { code?: string });
      expect(refused.map((e) => e.code)).toEqual(['BROWSE_LIMIT', 'BROWSE_LIMIT', 'BROWSE_LIMIT']);
      expect(await counted(r, a, 'browse')).toBe(200);
      expect(await counted(r, a, 'marker')).toBe(2);
    } finally {
      await r.close();
    }
  });

  test('one batch of successful charges: one account lock for the agent, one lot update, one day-counter update, one spend row', async () => {
    const r = await startRig();
    try {
      const a = agent();
      for (let i = 0; i < 50; i++) await r.metering.charge(a, 'search');
      await r.credits.add(a, { kind: 'purchase', units: cr(100), ref: `c:${a}` });
      const before = await r.handle.db.selectFrom('billing_accounts').select(['meter_stamp']).where('agent_id', '=', a).executeTakeFirstOrThrow();
      const results = await chargeInBatch(r, a, 8);
      expect(results.every((x) => x.status === 'fulfilled')).toBe(true);
      // The account was locked once: the stamp the batch replaced is the one it found.
      const after = await r.handle.db.selectFrom('billing_accounts').select(['meter_stamp', 'meter_prev_stamp']).where('agent_id', '=', a).executeTakeFirstOrThrow();
      expect(after.meter_prev_stamp).toBe(before.meter_stamp);
      expect((await r.credits.balance(a)).units).toBe(cr(84));
      expect(await r.credits.ledgerBalance(a)).toBe(cr(84));
      // These charges are never refunded: the batch's spend is one ledger row for the lot and action
      // (8 searches of 2 credits), with no single charge id.
      const spends = await r.handle.db.selectFrom('credit_ledger').select(['charge_id', 'amount_units', 'action', 'lot_id'])
        .where('agent_id', '=', a).where('kind', '=', 'spend').execute();
      const [lot] = await r.handle.db.selectFrom('credit_lots').select('lot_id').where('agent_id', '=', a).execute();
      expect(spends.map((s) => ({ ...s, amount_units: Number(s.amount_units) }))).toEqual([{ charge_id: null, amount_units: -cr(16), action: 'search', lot_id: lot.lot_id }]);
    } finally {
      await r.close();
    }
  });

  test('a batch whose charges empty one lot and go on into the next: one spend row per lot and action, each the exact sum drawn', async () => {
    const r = await startRig();
    try {
      const a = agent();
      for (let i = 0; i < 50; i++) await r.metering.charge(a, 'search');
      for (let i = 0; i < 20; i++) await r.metering.charge(a, 'browse_static');
      // A grant that expires is spent first (5 credits), then the purchase (100 credits).
      await r.credits.add(a, { kind: 'grant', units: cr(5), ref: `g:${a}`, expiresAt: r.clock.now() + 86_400_000 });
      await r.credits.add(a, { kind: 'purchase', units: cr(100), ref: `c:${a}` });
      const batcher = createWriteBatcher(r.handle.commits);
      // Four searches (2 credits each) then two static browses (3 each), all in one transaction.
      const actions: MeteredAction[] = ['search', 'search', 'search', 'search', 'browse_static', 'browse_static'];
      const results = await Promise.allSettled(actions.map((action) => batcher.submit((trx) => r.metering.chargeWithin(trx, a, action, { tier: 'free' }), a)));
      expect(results.every((x) => x.status === 'fulfilled')).toBe(true);
      const lots = await r.handle.db.selectFrom('credit_lots').select(['lot_id', 'kind', 'remaining_units']).where('agent_id', '=', a).execute();
      const grant = lots.find((l) => l.kind === 'grant')!;
      const purchase = lots.find((l) => l.kind === 'purchase')!;
      expect(Number(grant.remaining_units)).toBe(0);
      expect(Number(purchase.remaining_units)).toBe(cr(91));
      const spends = await r.handle.db.selectFrom('credit_ledger').select(['charge_id', 'amount_units', 'action', 'lot_id'])
        .where('agent_id', '=', a).where('kind', '=', 'spend').execute();
      const rows = spends.map((s) => `${s.lot_id === grant.lot_id ? 'grant' : 'purchase'} ${s.action} ${Number(s.amount_units)} ${s.charge_id}`).sort();
      // Searches: 5 credits from the grant, 3 from the purchase; browses: 6 from the purchase.
      expect(rows).toEqual([`grant search ${-cr(5)} null`, `purchase browse_static ${-cr(6)} null`, `purchase search ${-cr(3)} null`]);
      expect(await r.credits.ledgerBalance(a)).toBe(cr(91));
    } finally {
      await r.close();
    }
  });
});

/**
 * Billing's own group commit (metering.charge from many requests at once) runs its batch as the same
 * kind of scope: one lot update and one day-counter update per agent and batch. The same guarantees.
 */
describe(`charges group-committed by billing's own batcher (${testEngine()})`, () => {
  test('a monthly quota counts the calls of the same batch that are not written yet: 2 left, 6 asked at once, 2 through', async () => {
    const r = await startRig();
    try {
      const a = agent();
      // starter: 200 browses per UTC month.
      for (let i = 0; i < 198; i++) await r.metering.charge(a, 'browse_static', { tier: 'starter' });
      const results = await Promise.allSettled(Array.from({ length: 6 }, () => r.metering.charge(a, 'browse_static', { tier: 'starter' })));
      expect(results.filter((x) => x.status === 'fulfilled')).toHaveLength(2);
      const refused = results.filter((x) => x.status === 'rejected').map((x) => (x as PromiseRejectedResult).reason as { code?: string });
      expect(refused.map((e) => e.code)).toEqual(Array(4).fill('BROWSE_LIMIT'));
      expect(await counted(r, a, 'browse')).toBe(200);
    } finally {
      await r.close();
    }
  });

  test('two agents in the same batches, each across its floor and credit boundary: each draws only its own lots, exactly', async () => {
    const r = await startRig();
    try {
      const [a, b] = [agent(), agent()];
      for (let i = 0; i < 48; i++) await r.metering.charge(a, 'search');
      for (let i = 0; i < 45; i++) await r.metering.charge(b, 'search');
      await r.credits.add(a, { kind: 'purchase', units: cr(6), ref: `c:${a}` }); // 3 paid searches
      await r.credits.add(b, { kind: 'grant', units: cr(4), ref: `g:${b}`, expiresAt: Date.now() + 86_400_000 }); // 2 paid
      await r.credits.add(b, { kind: 'purchase', units: cr(4), ref: `c:${b}` }); // 2 more
      const calls = Array.from({ length: 40 }, (_, i) => r.metering.charge(i % 2 ? b : a, 'search'));
      const results = await Promise.allSettled(calls);
      const of = (who: number) => results.filter((_, i) => i % 2 === who);
      const paid = (xs: typeof results) => xs.filter((x) => x.status === 'fulfilled' && !(x.value as { free: boolean }).free).length;
      const free = (xs: typeof results) => xs.filter((x) => x.status === 'fulfilled' && (x.value as { free: boolean }).free).length;
      expect([free(of(0)), paid(of(0))]).toEqual([2, 3]);
      expect([free(of(1)), paid(of(1))]).toEqual([5, 4]);
      for (const who of [a, b]) {
        expect((await r.credits.balance(who)).units).toBe(0);
        expect(await r.credits.ledgerBalance(who)).toBe(0);
      }
      expect(await counted(r, a, 'search')).toBe(53);
      expect(await counted(r, b, 'search')).toBe(54);
    } finally {
      await r.close();
    }
  });
});
