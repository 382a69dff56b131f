import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { billingModuleFor, type BillingModule } from '../src/modules/billing/module';
import { utcDay } from '../src/lib/utc';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
let m: BillingModule;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_REFERRAL_PAYOUTS_ENABLED: 'true', SVC_REFERRAL_SETTLE_INTERVAL_SECONDS: '0', SVC_REFERRAL_CREDIT_EXPIRY_DAYS: '90' } });
  m = billingModuleFor(t.config)!;
});
afterAll(async () => t?.close());

const DAY = 86_400_000;
const settle = async () => (await t.request('POST', '/admin/billing/referrals/settle', { headers: { 'x-admin-key': 'test-admin-key' } })).body;
const balance = async (token: string) => (await t.request('GET', '/v1/billing', { token })).body;
const act = (agentId: string, n: number) => Promise.all(Array.from({ length: n }, () => m.metering.charge(agentId, 'memory_write')));

describe('referral payouts', () => {
  test('paid once the referred agent is active and the referrer is 7 UTC days old; credit expires', async () => {
    const referrer = await t.registerAgent();
    const referred = await t.registerAgent({ referral_agent: referrer.agentId });
    await act(referred.agentId, 3);
    expect(await settle()).toMatchObject({ enabled: true, paid: 0, waiting: 1 }); // referrer too young
    t.clock.advanceDays(7);
    const s = await settle();
    expect(s.paid).toBe(1);
    const b = await balance(referrer.apiKey);
    expect(b.credits_remaining_usd).toBe('0.5000');
    expect(b.credits_expire_at).toBe(new Date(t.clock.now() + 90 * DAY).toISOString());
    expect(await m.referrals.status(referred.agentId)).toMatchObject({ status: 'paid', amount_units: 5000 });
    expect((await settle()).paid).toBe(0); // never twice
    expect((await balance(referrer.apiKey)).credits_remaining_usd).toBe('0.5000');
    const me = await t.request('GET', '/v1/me', { token: referred.apiKey });
    expect(me.body.referral_agent).toBe(referrer.agentId);
  });

  test('inactive within 7 days → rejected; same owner excluded at registration and never paid', async () => {
    const referrer = await t.registerAgent();
    t.clock.advanceDays(8);
    const lazy = await t.registerAgent({ referral_agent: referrer.agentId });
    await act(lazy.agentId, 2);
    expect((await settle()).paid).toBe(0);
    t.clock.advanceDays(7);
    await act(lazy.agentId, 5); // too late
    await settle();
    expect(await m.referrals.status(lazy.agentId)).toMatchObject({ status: 'rejected', reason: 'inactive' });
    const owner = (await t.request('GET', '/v1/me', { token: referrer.apiKey })).body.owner_identifier;
    const sibling = await t.registerAgent({ referral_agent: referrer.agentId, owner_identifier: owner });
    expect(sibling.body.referral).toMatchObject({ status: 'excluded', reason: 'same_owner' });
    await act(sibling.agentId, 5);
    await settle();
    expect((await balance(referrer.apiKey)).credits_remaining_usd).toBe('0.0000');
  });

  test('frozen or legacy-tier referrers are not paid', async () => {
    for (const patch of [{ frozen: 1 }, { tier: 'pro' }]) {
      const referrer = await t.registerAgent();
      t.clock.advanceDays(8);
      const referred = await t.registerAgent({ referral_agent: referrer.agentId });
      await act(referred.agentId, 3);
      await m.store.db.updateTable('agents').set(patch).where('agent_id', '=', referrer.agentId).execute();
      await settle();
      expect((await m.referrals.status(referred.agentId))?.status).toBe('rejected');
    }
  });

  test('at most 5 payouts per referrer per UTC day; 50 network-wide; the rest wait for the next day', async () => {
    t.clock.set(Date.UTC(2027, 5, 1, 9));
    const referrer = await t.registerAgent();
    t.clock.advanceDays(8);
    const referred = [];
    for (let i = 0; i < 6; i++) referred.push(await t.registerAgent({ referral_agent: referrer.agentId }));
    for (const r of referred) await act(r.agentId, 3);
    expect(await settle()).toMatchObject({ paid: 5, waiting: 1 });
    expect((await balance(referrer.apiKey)).credits_remaining_usd).toBe('2.5000');
    t.clock.advanceDays(1);
    expect((await settle()).paid).toBe(1);
    // Network-wide: 50 paid today already → nobody else is paid today.
    const day = utcDay(t.clock.now());
    await m.store.db.insertInto('referral_payouts').values(Array.from({ length: 49 }, (_, i) => ({
      referred_agent_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, referrer_agent_id: 'x', status: 'paid', reason: null, amount_units: 5000, day, decided_at: t.clock.now(),
    }))).execute();
    const other = await t.registerAgent();
    t.clock.advanceDays(7);
    const r2 = await t.registerAgent({ referral_agent: other.agentId });
    await act(r2.agentId, 3);
    t.clock.set(Date.parse(`${day}T23:00:00Z`) < t.clock.now() ? t.clock.now() : Date.parse(`${day}T23:00:00Z`));
    const today = utcDay(t.clock.now());
    await m.store.db.insertInto('referral_payouts').values(Array.from({ length: 50 }, (_, i) => ({
      referred_agent_id: `00000000-0000-4000-9000-${String(i).padStart(12, '0')}`, referrer_agent_id: 'y', status: 'paid', reason: null, amount_units: 5000, day: today, decided_at: t.clock.now(),
    }))).execute();
    expect((await settle()).paid).toBe(0);
    t.clock.advanceDays(1);
    expect((await settle()).paid).toBe(1);
  });

  test('admin route needs the admin key', async () => {
    expect((await t.request('POST', '/admin/billing/referrals/settle')).status).toBe(401);
  });
});
