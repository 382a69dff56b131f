import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { credits as cr } from '../src/lib/money';
import { ledgerEntries } from '../src/modules/billing/ledger-store';
import { agent, startRig, type BillingRig } from './billing-support';

let r: BillingRig;
beforeAll(async () => {
  r = await startRig();
});
afterAll(async () => r?.close());

const DAY = 86_400_000;
/** n calls at once (they are group-committed, so this is also fast on PGlite). */
const many = <T>(n: number, f: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));

async function refused(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a refusal');
}

describe('credit ledger', () => {
  test('grants, purchases, spends and refunds; the balance is derived and matches the ledger', async () => {
    const a = agent();
    expect((await r.credits.add(a, { kind: 'purchase', units: cr(10), ref: `t:${a}:1` })).added).toBe(true);
    expect((await r.credits.add(a, { kind: 'purchase', units: cr(10), ref: `t:${a}:1` })).added).toBe(false); // same ref: once
    await r.credits.add(a, { kind: 'grant', units: cr(5), expiresAt: r.clock.now() + 10 * DAY, ref: `t:${a}:2` });
    expect((await r.credits.balance(a)).units).toBe(cr(15));
    // Use up the search floor, then pay: expiring grant is drawn first.
    expect((await many(50, () => r.metering.charge(a, 'search'))).every((c) => c.free)).toBe(true);
    const paid = await r.metering.charge(a, 'search');
    expect(paid).toMatchObject({ free: false, costUnits: cr(2) });
    expect(paid.usage.credits_remaining_usd).toBe('0.1300');
    expect(paid.usage.credits_expire_at).toBe(new Date(r.clock.now() + 10 * DAY).toISOString());
    await paid.refund();
    await paid.refund(); // idempotent
    expect((await r.credits.balance(a)).units).toBe(cr(15));
    const kinds = (await ledgerEntries(r.handle.db, a)).map((e) => e.kind);
    expect(kinds).toEqual(['purchase', 'grant', 'spend', 'refund']);
    expect(await r.credits.ledgerBalance(a)).toBe(cr(15));
    // The grant expires: only the purchase is left, and the ledger agrees.
    r.clock.advanceDays(10);
    expect((await r.credits.balance(a))).toEqual({ units: cr(10), earliestExpiry: null });
    expect(await r.credits.ledgerBalance(a)).toBe(cr(10));
  });

  test('a spend larger than one lot draws from several (soonest expiry first, purchase last)', async () => {
    const a = agent();
    const now = r.clock.now();
    await r.credits.add(a, { kind: 'purchase', units: cr(3), ref: `t:${a}:p` });
    await r.credits.add(a, { kind: 'grant', units: cr(1), expiresAt: now + 2 * DAY, ref: `t:${a}:g1` });
    await r.credits.add(a, { kind: 'grant', units: cr(1), expiresAt: now + 1 * DAY, ref: `t:${a}:g2` });
    await many(20, () => r.metering.charge(a, 'browse_static'));
    const c = await r.metering.charge(a, 'browse_static'); // 3 credits: g2, g1, then 1 from the purchase
    expect(c.usage.credits_remaining_usd).toBe('0.0200');
    const spends = (await ledgerEntries(r.handle.db, a)).filter((e) => e.kind === 'spend');
    expect(spends.map((s) => Number(s.amount_units))).toEqual([-100, -100, -100]);
    expect(c.usage.credits_expire_at).toBeNull();
  });
});

describe('rolling free floors', () => {
  test('a floor call ages out at exactly 30 days, not a millisecond earlier', async () => {
    const a = agent();
    const t0 = r.clock.now();
    for (let i = 0; i < 20; i++) {
      expect((await r.metering.charge(a, i % 2 ? 'browse_dynamic' : 'browse_static')).free).toBe(true);
      r.clock.advanceSeconds(60);
    }
    let e = await refused(r.metering.charge(a, 'browse_static'));
    expect(e).toMatchObject({ status: 402, code: 'INSUFFICIENT_CREDITS' });
    expect(e.extra.upgrade_url).toBe('http://svc.test/billing');
    r.clock.set(t0 + 30 * DAY - 1);
    e = await refused(r.metering.charge(a, 'browse_static'));
    expect(e.code).toBe('INSUFFICIENT_CREDITS');
    r.clock.set(t0 + 30 * DAY);
    const c = await r.metering.charge(a, 'browse_static'); // the first call (at t0) has aged out
    expect(c.free).toBe(true);
    expect(c.usage.browse_calls_remaining).toBe(0);
    // the second one (t0 + 60 s) ages out 60 s later, and not before
    expect((await refused(r.metering.charge(a, 'browse_static'))).code).toBe('INSUFFICIENT_CREDITS');
    r.clock.set(t0 + 30 * DAY + 60_000);
    expect((await r.metering.charge(a, 'browse_dynamic')).free).toBe(true);
  });

  test('floors are per pool; blob search shares the search pool; parse is free within the monthly quota', async () => {
    const a = agent();
    await many(50, (i) => r.metering.charge(a, i % 2 ? 'search' : 'blob_search'));
    expect((await refused(r.metering.charge(a, 'blob_search'))).code).toBe('INSUFFICIENT_CREDITS');
    expect((await r.metering.charge(a, 'memory_write')).free).toBe(true);
    const u = await r.metering.usage(a);
    expect(u).toMatchObject({ credits_remaining_usd: '0.0000', tier_label: 'Free', auto_topup: false, credits_expire_at: null, browse_calls_remaining: 20 });
    await many(100, () => r.metering.charge(a, 'parse')); // free tier: 100 parses per UTC month
    const p = await refused(r.metering.charge(a, 'parse'));
    expect(p).toMatchObject({ status: 429, code: 'PARSE_QUOTA_EXCEEDED' });
  });

  test('a refunded free call gives its slot back', async () => {
    const a = agent();
    const charges = await many(50, () => r.metering.charge(a, 'search'));
    expect((await refused(r.metering.charge(a, 'search'))).code).toBe('INSUFFICIENT_CREDITS');
    await charges[17].refund();
    expect((await r.metering.charge(a, 'search')).free).toBe(true);
    expect((await refused(r.metering.charge(a, 'search'))).code).toBe('INSUFFICIENT_CREDITS');
  });
});

describe('refund from a receipt (work that outlives the request, e.g. an async parse)', () => {
  test('the receipt gives back a paid call\'s credit and count, and a free call\'s slot, inside the caller\'s transaction', async () => {
    const a = agent();
    await r.credits.add(a, { kind: 'purchase', units: cr(10), ref: `t:${a}:p` });
    const free = await many(50, () => r.metering.charge(a, 'search'));
    const paid = await r.metering.charge(a, 'search');
    expect(paid).toMatchObject({ free: false, costUnits: cr(2) });
    // Plain JSON, as a caller stores it.
    const receipt = JSON.parse(JSON.stringify(paid.receipt));
    expect(receipt).toMatchObject({ charge_id: paid.chargeId, agent_id: a, pool: 'search', free: false, cost_units: cr(2) });
    expect(receipt.spend_entries.length).toBeGreaterThan(0);
    await r.handle.db.transaction().execute((trx) => r.metering.refundReceipt(trx, receipt));
    expect((await r.credits.balance(a)).units).toBe(cr(10));
    expect(await r.credits.ledgerBalance(a)).toBe(cr(10));
    expect((await r.metering.usage(a)).credits_remaining_usd).toBe('0.1000');
    // A rolled-back transaction gives nothing back.
    const freeReceipt = JSON.parse(JSON.stringify(free[3].receipt));
    await expect(r.handle.db.transaction().execute(async (trx) => {
      await r.metering.refundReceipt(trx, freeReceipt);
      throw new Error('the caller\'s own write failed');
    })).rejects.toThrow('own write failed');
    expect((await r.metering.charge(a, 'search')).free).toBe(false);
    // Committed: the free slot is back, so the next call is free again.
    await r.handle.db.transaction().execute((trx) => r.metering.refundReceipt(trx, freeReceipt));
    expect((await r.metering.charge(a, 'search')).free).toBe(true);
  });
});

describe('the credit check (a dry run before the work)', () => {
  test('a yes may come from the state in memory; a no, and every charge, from the database', async () => {
    const a = agent();
    await r.credits.add(a, { kind: 'grant', units: cr(3), ref: `t:${a}:g` });
    await many(20, () => r.metering.charge(a, 'browse_static')); // the browse floor, used up
    await r.metering.check(a, 'browse_static'); // 3 credits: one paid browse
    // Another instance spends the credit (its charge rotates the stamp; this instance's copy still has it).
    await r.handle.db.updateTable('credit_lots').set({ remaining_units: 0 }).where('agent_id', '=', a).execute();
    await r.handle.db.updateTable('billing_accounts').set({ meter_stamp: 'another-instance' }).where('agent_id', '=', a).execute();
    // The copy in memory lets the check through without reading the database ...
    await r.metering.check(a, 'browse_static');
    // ... and the charge, decided under the lock on what the database holds, refuses: nothing is overspent.
    expect((await refused(r.metering.charge(a, 'browse_static'))).code).toBe('INSUFFICIENT_CREDITS');
    expect((await r.credits.balance(a)).units).toBe(0);
    expect((await refused(r.metering.check(a, 'browse_static'))).code).toBe('INSUFFICIENT_CREDITS');
    // A copy that says no is not trusted: credit granted since (the copy still has none) lets the check through.
    await r.credits.add(a, { kind: 'grant', units: cr(3), ref: `t:${a}:g2` });
    await r.metering.check(a, 'browse_static');
    expect((await r.metering.charge(a, 'browse_static')).costUnits).toBe(cr(3));
    expect((await refused(r.metering.check(a, 'browse_static'))).code).toBe('INSUFFICIENT_CREDITS');
  });
});

describe('legacy monthly tiers', () => {
  test('starter: 200 browses per UTC month, refused past it, fresh at the UTC month rollover', async () => {
    const a = agent();
    r.clock.set(Date.UTC(2027, 0, 31, 23, 0, 0));
    expect((await many(200, () => r.metering.charge(a, 'browse_static', { tier: 'starter' }))).every((c) => c.free)).toBe(true);
    const e = await refused(r.metering.charge(a, 'browse_static', { tier: 'starter' }));
    expect(e).toMatchObject({ status: 429, code: 'BROWSE_LIMIT' });
    r.clock.set(Date.UTC(2027, 0, 31, 23, 59, 59, 999));
    expect((await refused(r.metering.charge(a, 'browse_dynamic', { tier: 'starter' }))).code).toBe('BROWSE_LIMIT');
    r.clock.set(Date.UTC(2027, 1, 1, 0, 0, 0));
    const c = await r.metering.charge(a, 'browse_static', { tier: 'starter' });
    expect(c).toMatchObject({ free: true, tier: 'starter' });
    expect(c.usage.browse_calls_remaining).toBe(199);
    expect(c.usage.tier_label).toBe('Starter (legacy)');
  });

  test('starter: 5,000 memory writes per month → 429 MEMORY_OPS_LIMIT; pro: unlimited', async () => {
    const a = agent();
    r.clock.set(Date.UTC(2027, 2, 10));
    await r.handle.db.insertInto('metering_daily').values({ agent_id: a, pool: 'memory_write', day: '2027-03-01', count: 4999 }).execute();
    expect((await r.metering.charge(a, 'memory_write', { tier: 'starter' })).free).toBe(true);
    expect(await refused(r.metering.charge(a, 'memory_write', { tier: 'starter' }))).toMatchObject({ status: 429, code: 'MEMORY_OPS_LIMIT' });
    expect((await r.metering.charge(a, 'memory_write', { tier: 'pro' })).free).toBe(true);
  });

  test('search past the monthly quota pays the overage rate from credit, else 429 SEARCH_CALLS_LIMIT', async () => {
    const a = agent();
    r.clock.set(Date.UTC(2027, 3, 30, 12));
    await r.handle.db.insertInto('metering_daily').values({ agent_id: a, pool: 'search', day: '2027-04-02', count: 7500 }).execute();
    const e = await refused(r.metering.charge(a, 'search', { tier: 'pro' }));
    expect(e).toMatchObject({ status: 429, code: 'SEARCH_CALLS_LIMIT' });
    expect(e.extra.upgrade_url).toBeTruthy();
    await r.credits.add(a, { kind: 'purchase', units: cr(10), ref: `t:${a}` });
    const c = await r.metering.charge(a, 'blob_search', { tier: 'pro' });
    expect(c).toMatchObject({ free: false, costUnits: 120 }); // 0.012 USD
    expect(c.usage.credits_remaining_usd).toBe('0.0880');
    r.clock.set(Date.UTC(2027, 4, 1)); // May: quota again
    expect((await r.metering.charge(a, 'search', { tier: 'pro' })).free).toBe(true);
  });
});

describe('this month\'s call count', () => {
  /** The search pool's calls this UTC month as the daily counters have them. */
  const counted = async (a: string, month: string) => Number((await r.handle.db.selectFrom('metering_daily')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('count'), eb.val(0)).as('n'))
    .where('agent_id', '=', a).where('pool', '=', 'search').where('day', '>=', `${month}-01`).where('day', '<=', `${month}-31`)
    .executeTakeFirstOrThrow()).n);

  test('kept in memory between charges, it always equals the daily counters: refunds, grants, a new day, a new month', async () => {
    const a = agent();
    r.clock.set(Date.UTC(2027, 5, 29, 23, 0));
    const calls = async () => (await r.metering.charge(a, 'search', { tier: 'pro' })).poolCounts!.callsThisMonth;
    expect(await calls()).toBe(1);
    expect(await many(5, () => calls())).toEqual(expect.arrayContaining([2, 3, 4, 5, 6]));
    expect(await counted(a, '2027-06')).toBe(6);
    await (await r.metering.charge(a, 'search', { tier: 'pro' })).refund(); // counted, then given back
    expect(await calls()).toBe(7);
    await r.credits.add(a, { kind: 'grant', units: cr(1), ref: `t:${a}:month` }); // another writer of the account
    expect(await calls()).toBe(8);
    r.clock.advance(3_600_000); // 30 June, midnight UTC: the same month, another day
    expect(await calls()).toBe(9);
    expect(await counted(a, '2027-06')).toBe(9);
    r.clock.set(Date.UTC(2027, 6, 1, 0, 0)); // July
    expect(await calls()).toBe(1);
    expect(await counted(a, '2027-07')).toBe(1);
  });
});

describe('tiers from purchases', () => {
  test('a purchase moves a free agent to spark; 25 USD lifetime to sprint', async () => {
    const a = agent();
    await r.credits.add(a, { kind: 'purchase', units: cr(100), ref: `t:${a}:1` });
    expect((await r.metering.charge(a, 'memory_write')).tier).toBe('spark');
    await r.credits.add(a, { kind: 'purchase', units: cr(2400), ref: `t:${a}:2` });
    const c = await r.metering.charge(a, 'memory_write');
    expect(c.tier).toBe('sprint');
    expect(c.usage.tier_label).toBe('Sprint');
    // a grant is not a purchase
    const b = agent();
    await r.credits.add(b, { kind: 'grant', units: cr(5000), ref: `t:${b}` });
    expect((await r.metering.charge(b, 'memory_write')).tier).toBe('free');
  });
});
