/**
 * Credit leases (src/modules/billing/leases.ts): paid calls answered from credit held aside under the
 * account lock and settled shortly after. On the engine under test; several instances on the
 * a local PostgreSQL server. What must hold: every answered paid call is in the ledger once
 * settled (balance, ledger and day counters agree), no call is answered beyond the credit, credit
 * held by this instance pays a call rather than refusing it, a hold of a dead instance stops setting
 * credit aside once it expires, and readers see every call.
 */
import { afterAll, describe, expect, test } from 'vitest';
import type { DatabaseHandle } from '../src/infra/db/database';
import { ManualClock } from '../src/lib/clock';
import { credits as cr } from '../src/lib/money';
import type { LeaseOptions } from '../src/modules/billing/metering-contract';
import { billingModuleFor } from '../src/modules/billing/module';
import { testEngine } from './helpers/engines';
import { startBraveFake } from './fakes/search-providers';
import { startWebApp } from './search-support';
import { agent, openRigDatabase, rigOn, serverPostgres } from './billing-support';

const DAY = 86_400_000;
/** Small blocks (4 calls, 8 credits) so a test crosses many top-ups; settles every 20 ms. */
const LEASES: LeaseOptions = { calls: 4, settleMs: 20, useMs: 2_000, holdMs: 30_000 };

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const h of opened.reverse()) await h.close();
});

async function rig(options: LeaseOptions = LEASES, clock = new ManualClock(Date.UTC(2026, 10, 25, 10))) {
  const { test: t, handle } = await openRigDatabase();
  const r = { ...rigOn(handle, clock, { leases: options }), handle, clock };
  opened.push(t, handle, { close: () => r.metering.close() });
  return r;
}
type Rig = Awaited<ReturnType<typeof rig>>;

const holds = (h: DatabaseHandle, a: string) => h.db.selectFrom('metering_holds').selectAll().where('agent_id', '=', a).execute()
  .then((rows) => rows.map((r) => ({ ...r, units: Number(r.units), expires_at: Number(r.expires_at) })));
const spends = (h: DatabaseHandle, a: string) => h.db.selectFrom('credit_ledger').select(['amount_units', 'charge_id']).where('agent_id', '=', a).where('kind', '=', 'spend').execute()
  .then((rows) => rows.map((r) => ({ units: -Number(r.amount_units), chargeId: r.charge_id })));
const searchCalls = (h: DatabaseHandle, a: string) => h.db.selectFrom('metering_daily').select('count').where('agent_id', '=', a).where('pool', '=', 'search').execute()
  .then((rows) => rows.reduce((n, r) => n + Number(r.count), 0));

/** An agent with `credit` credits and its 50 free searches used. */
async function paying(r: Rig, credit: number): Promise<string> {
  const a = agent();
  await r.credits.add(a, { kind: 'purchase', units: cr(credit), ref: `p:${a}` });
  for (let i = 0; i < 50; i++) expect((await r.metering.charge(a, 'search')).free).toBe(true);
  return a;
}

/** Balance, ledger and counters agree once settled: `paid` calls at 2 credits from `credit`. */
async function settledExactly(r: Rig, a: string, credit: number, paid: number, calls = 50 + paid) {
  await r.metering.settle(a);
  expect((await r.credits.balance(a)).units).toBe(cr(credit - 2 * paid));
  expect(await r.credits.ledgerBalance(a)).toBe(cr(credit - 2 * paid));
  expect((await spends(r.handle, a)).reduce((n, s) => n + s.units, 0)).toBe(cr(2 * paid));
  expect(await searchCalls(r.handle, a)).toBe(calls);
}

const PG_SERVER = testEngine() === 'postgres' ? await serverPostgres() : undefined;
if (PG_SERVER) opened.push(PG_SERVER); // dropped last, after the instances' handles
if (testEngine() === 'postgres' && !PG_SERVER) console.warn('!! SKIPPED credit leases across three instances: no PostgreSQL server at 127.0.0.1:5432 (or SVC_TEST_PG)');

describe(`credit leases (${testEngine()})`, () => {
  test('past the floor with ample credit: a hold is taken with the first paid charge, later calls are answered from it and settled into the ledger', async () => {
    const r = await rig();
    const a = await paying(r, 1000);
    const first = await r.metering.charge(a, 'search');
    expect(first).toMatchObject({ free: false, costUnits: cr(2) });
    // The hold went to disk with the charge: one block of 4 calls at 2 credits.
    expect(await holds(r.handle, a)).toEqual([expect.objectContaining({ pool: 'search', units: cr(8), expires_at: r.clock.now() + 30_000 })]);
    const answered = [];
    for (let i = 0; i < 40; i++) answered.push(await r.metering.charge(a, 'search'));
    // (A purchase of 10 USD lifts the tier to spark.)
    for (const c of answered) expect(c).toMatchObject({ free: false, costUnits: cr(2), pool: 'search', tier: 'spark' });
    // Each answer shows the balance and this month's count after it, leased or not.
    const balances = [first, ...answered].map((c) => Number(c.usage.credits_remaining_usd.replace('.', '')));
    expect(balances).toEqual(balances.map((_, i) => cr(1000 - 2 * (i + 1))));
    expect([first, ...answered].map((c) => c.poolCounts!.callsThisMonth)).toEqual(Array.from({ length: 41 }, (_, i) => 51 + i));
    await settledExactly(r, a, 1000, 41);
    // Leased calls are written per lot and action (no charge id), the charges under the lock one row each.
    const rows = await spends(r.handle, a);
    expect(rows.filter((x) => x.chargeId === null).length).toBeGreaterThan(0);
    expect(rows.filter((x) => x.chargeId !== null).length).toBeLessThan(41);
    // Shutdown writes what is left and gives the hold back.
    await r.metering.charge(a, 'search');
    await r.metering.close();
    expect(await holds(r.handle, a)).toEqual([]);
    expect(await r.credits.ledgerBalance(a)).toBe(cr(1000 - 84));
  });

  test('the snapshot and GET /v1/usage readers settle first: they count a leased call at once', async () => {
    const r = await rig({ ...LEASES, settleMs: 60_000 });
    const a = await paying(r, 1000);
    for (let i = 0; i < 3; i++) await r.metering.charge(a, 'search');
    // No settle has run (a minute away): the readers' own settle writes the leased calls.
    const usage = await r.metering.usage(a);
    expect(usage.credits_remaining_usd).toBe('9.9400');
    expect(await searchCalls(r.handle, a)).toBe(53);
  });

  test('a refund gives the call back: before its settle to the block, after it to the lots it came from', async () => {
    const r = await rig({ ...LEASES, calls: 16, settleMs: 60_000 });
    const a = await paying(r, 1000);
    await r.metering.charge(a, 'search'); // takes the hold
    const early = await r.metering.charge(a, 'search');
    const late = await r.metering.charge(a, 'search');
    await early.refund();
    await early.refund(); // idempotent
    await r.metering.settle(a);
    await late.refund();
    await late.refund();
    await r.metering.settle(a);
    expect((await r.credits.balance(a)).units).toBe(cr(998));
    expect(await r.credits.ledgerBalance(a)).toBe(cr(998));
    expect(await searchCalls(r.handle, a)).toBe(51);
    const refunds = await r.handle.db.selectFrom('credit_ledger').select(['charge_id', 'amount_units']).where('agent_id', '=', a).where('kind', '=', 'refund').execute();
    expect(refunds.map((x) => [x.charge_id, Number(x.amount_units)])).toEqual([[late.chargeId, cr(2)]]);
  });

  test('near the end of the credit: 100 calls at once with credit for 30 give exactly 30, the held part included; the balance ends at 0', async () => {
    const r = await rig();
    const a = await paying(r, 60);
    const out = await Promise.allSettled(Array.from({ length: 100 }, () => r.metering.charge(a, 'search')));
    const ok = out.filter((x) => x.status === 'fulfilled');
    const refused = out.filter((x) => x.status === 'rejected').map((x) => (x as PromiseRejectedResult).reason);
    expect(ok).toHaveLength(30);
    for (const e of refused) expect(e.code).toBe('INSUFFICIENT_CREDITS');
    await settledExactly(r, a, 60, 30);
    // Then the lease, with nothing left to top up from, ends and its hold goes.
    await expect.poll(() => holds(r.handle, a), { timeout: 5_000 }).toEqual([]);
  });

  test('held credit pays a memory write or a blob search of the same agent rather than refusing it', async () => {
    const r = await rig({ ...LEASES, calls: 10, settleMs: 60_000 });
    const a = await paying(r, 120);
    await r.metering.charge(a, 'search'); // 2 credits, and a hold of 20
    expect((await holds(r.handle, a))[0]!.units).toBe(cr(20));
    // The free floor of memory writes.
    for (let i = 0; i < 1000; i += 100) await Promise.all(Array.from({ length: 100 }, () => r.metering.charge(a, 'memory_write')));
    // 118 credits: 98 unheld and 20 held for the search lease; all of it pays blob searches.
    const blob = [];
    for (let i = 0; i < 59; i++) blob.push(await r.metering.charge(a, 'blob_search'));
    expect(blob.every((c) => !c.free)).toBe(true);
    await expect(r.metering.charge(a, 'blob_search')).rejects.toMatchObject({ code: 'INSUFFICIENT_CREDITS' });
    await r.metering.settle(a);
    expect((await r.credits.balance(a)).units).toBe(0);
    expect(await r.credits.ledgerBalance(a)).toBe(0);
  });

  test('no hold when the credit is not ample, with leases off, or while a free call is due', async () => {
    const small = await rig();
    const a = await paying(small, 39); // a block of 8 needs 5 blocks unheld after it
    for (let i = 0; i < 5; i++) await small.metering.charge(a, 'search');
    expect(await holds(small.handle, a)).toEqual([]);
    await settledExactly(small, a, 39, 5);

    const off = await rig({ calls: 0 });
    const b = await paying(off, 1000);
    for (let i = 0; i < 5; i++) await off.metering.charge(b, 'search');
    expect(await holds(off.handle, b)).toEqual([]);
    await settledExactly(off, b, 1000, 5);

    // A lease ends before the first free call leaves the rolling window (here 1 s after the hold,
    // inside its 2 s of use): that call is free, not paid from the block.
    const r = await rig();
    const c = agent();
    await r.credits.add(c, { kind: 'purchase', units: cr(1000), ref: `p:${c}` });
    await r.metering.charge(c, 'search'); // the oldest free call
    r.clock.advance(30 * DAY - 1_000);
    for (let i = 0; i < 49; i++) await r.metering.charge(c, 'search');
    expect((await r.metering.charge(c, 'search')).free).toBe(false); // paid: takes a hold
    expect(await holds(r.handle, c)).toHaveLength(1);
    expect((await r.metering.charge(c, 'search')).free).toBe(false); // from the block
    r.clock.advance(1_000); // the first free call leaves the window now
    expect((await r.metering.charge(c, 'search')).free).toBe(true);
    // An idle lease ends `useMs` after its last settle; its hold goes.
    await r.metering.settle(c);
    r.clock.advance(2_001);
    await expect.poll(() => holds(r.handle, c), { timeout: 5_000 }).toEqual([]);
  });

  test('a dead instance\'s hold sets credit aside until it expires, and its unsettled calls are never charged', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 25, 10));
    const r = await rig({ calls: 0 }, clock); // the live instance charges every call under the lock
    const a = await paying(r, 100);
    // A second instance on the same database that never settles (its settle is an hour away) and
    // then stops: a crash as the ledger sees it.
    const dead = rigOn(r.handle, clock, { leases: { ...LEASES, calls: 5, settleMs: 3_600_000 } });
    await dead.metering.charge(a, 'search'); // 98 left, 10 of it held by the dead instance
    for (let i = 0; i < 4; i++) await dead.metering.charge(a, 'search'); // answered from its block, never written
    expect(await holds(r.handle, a)).toEqual([expect.objectContaining({ units: cr(10) })]);
    // The live instance may spend 88 credits, not 98.
    for (let i = 0; i < 44; i++) await r.metering.charge(a, 'search');
    const refused = await r.metering.charge(a, 'search').catch((e) => e);
    expect(refused.code).toBe('INSUFFICIENT_CREDITS');
    expect(refused.message).toMatch(/0\.1000 USD is held/);
    clock.advance(30_001);
    await r.metering.charge(a, 'search');
    await settledExactly(r, a, 100, 46, 96);
  });
});

describe(`credit leases over HTTP (${testEngine()})`, () => {
  test('cached searches past the floor: every answer counts and charges, GET /v1/billing and GET /v1/usage agree at once', async () => {
    const brave = await startBraveFake({ apiKey: 'brave-key' });
    const w = await startWebApp({ SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'brave-key', SVC_BRAVE_URL: brave.url, SVC_METERING_LEASE_CALLS: '4' });
    try {
      const a = await w.agent();
      const billing = billingModuleFor(w.config)!;
      await billing.credits.add(a.id, { kind: 'grant', units: cr(500), ref: `g:${a.id}` });
      const seen: string[] = [];
      for (let i = 0; i < 70; i++) {
        const res = await w.request('GET', '/v1/search?q=leases&num_results=3', { token: a.token });
        expect(res.status).toBe(200);
        seen.push(res.body._svc.usage.credits_remaining_usd);
        expect(res.body.usage.calls_total).toBe(i + 1);
      }
      expect(brave.requests).toBe(1); // one miss, then cache hits
      // 20 paid searches: the balance each answer shows falls by 0.02 USD a call.
      expect(seen.slice(50)).toEqual(Array.from({ length: 20 }, (_, i) => (5 - 0.02 * (i + 1)).toFixed(4)));
      expect(await holds(w.built.database, a.id)).toHaveLength(1);
      const snap = await w.request('GET', '/v1/billing', { token: a.token });
      expect(snap.status).toBe(200);
      expect(snap.body.credits_remaining_usd).toBe('4.6000');
      expect(await billing.credits.ledgerBalance(a.id)).toBe(cr(460));
      const usage = await w.request('GET', '/v1/usage', { token: a.token });
      expect(usage.status).toBe(200);
      expect(usage.body.calls_this_month).toBe(70);
    } finally {
      await w.close();
      await brave.close();
    }
  });
});

describe(`credit leases with several instances (${testEngine()})`, () => {
  // SQLite is one instance by design; on PostgreSQL several instances need a server (PGlite is one session).
  const several = testEngine() === 'postgres' && PG_SERVER ? test : test.skip;
  several('three instances with leases racing one agent down to zero: exactly the credit is spent, never more', async () => {
    const server = PG_SERVER;
    const clock = new ManualClock(Date.UTC(2026, 10, 25, 10));
    const instances: (ReturnType<typeof rigOn> & { handle: DatabaseHandle })[] = [];
    for (let i = 0; i < 3; i++) {
      const { handle } = await openRigDatabase(server, 5);
      const x = { ...rigOn(handle, clock, { leases: LEASES }), handle };
      opened.push(handle, { close: () => x.metering.close() });
      instances.push(x);
    }
    const a = agent();
    await instances[0].credits.add(a, { kind: 'purchase', units: cr(300), ref: `p:${a}` });
    for (let i = 0; i < 50; i++) await instances[i % 3].metering.charge(a, 'search');
    // Rounds of concurrent calls on all three until the credit is gone. Near the end a call can be
    // refused while another instance still holds part of the credit (until that lease settles or
    // ends): after each round the leases settle, and idle ones end, so the next round can spend it.
    let ok = 0;
    for (let round = 0; round < 60; round++) {
      const out = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => instances[i % 3].metering.charge(a, 'search')));
      ok += out.filter((x) => x.status === 'fulfilled').length;
      for (const x of out) if (x.status === 'rejected') expect(x.reason.code).toBe('INSUFFICIENT_CREDITS');
      await Promise.all(instances.map((x) => x.metering.settle()));
      // Never more spent than there was, at any point.
      expect(await instances[0].credits.ledgerBalance(a)).toBeGreaterThanOrEqual(0);
      clock.advance(3_000);
      await Promise.all(instances.map((x) => x.metering.settle()));
      if ((await instances[1].credits.balance(a)).units === 0) break;
    }
    expect(ok).toBe(150);
    expect((await instances[1].credits.balance(a)).units).toBe(0);
    expect(await instances[2].credits.ledgerBalance(a)).toBe(0);
    expect(await searchCalls(instances[0].handle, a)).toBe(200);
  });
});
