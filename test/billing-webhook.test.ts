import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { credits as cr } from '../src/lib/money';
import { billingModuleFor, type BillingModule } from '../src/modules/billing/module';
import { ledgerEntries } from '../src/modules/billing/ledger-store';
import { startTestApp, type TestApp } from './helpers/harness';
import { DECLINED_PM, startStripeFake, stripeEnv, type StripeFake } from './fakes/stripe';

let t: TestApp;
let fake: StripeFake;
let m: BillingModule;
beforeAll(async () => {
  fake = await startStripeFake();
  t = await startTestApp({ env: stripeEnv(fake) });
  m = billingModuleFor(t.config)!;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const deliver = (e: { payload: string; header: string }, header = e.header) =>
  t.request('POST', '/v1/billing/payment-processor/webhook', { body: e.payload, headers: { 'content-type': 'application/json', 'stripe-signature': header } });

async function paidCheckout(credits: number) {
  const a = await t.registerAgent();
  const co = await t.request('POST', '/v1/billing/credits/checkout', { token: a.apiKey, body: { credits } });
  expect(co.status).toBe(200);
  return { a, intent: fake.succeed(co.body.intent_id) };
}

const balance = async (token: string) => (await t.request('GET', '/v1/billing', { token })).body.credits_remaining_usd;

describe('payment_intent.succeeded', () => {
  test('grants the purchased credits once, even when delivered twice and concurrently', async () => {
    const { a, intent } = await paidCheckout(1000);
    const e = fake.signedEvent('payment_intent.succeeded', intent);
    const first = await deliver(e);
    expect(first.status).toBe(200);
    expect(first.body.effect).toBe('credits_granted');
    expect(await balance(a.apiKey)).toBe('10.0000');
    expect((await deliver(e)).body.effect).toMatch(/already granted/);
    // Stripe may also re-send the same intent under a new event id, many times at once.
    const again = await Promise.all(Array.from({ length: 10 }, () => deliver(fake.signedEvent('payment_intent.succeeded', intent))));
    expect(again.every((r) => r.status === 200)).toBe(true);
    expect(await balance(a.apiKey)).toBe('10.0000');
    const purchases = (await ledgerEntries(t.app ? m.store.db : m.store.db, a.agentId)).filter((x) => x.kind === 'purchase');
    expect(purchases).toHaveLength(1);
    const snap = (await t.request('GET', '/v1/billing', { token: a.apiKey })).body;
    expect(snap).toMatchObject({ tier: 'spark', tier_label: 'Spark', credits_expire_at: null });
  });

  test('concurrent first deliveries of one event: one grant', async () => {
    const { a, intent } = await paidCheckout(60);
    const e = fake.signedEvent('payment_intent.succeeded', intent);
    const rs = await Promise.all(Array.from({ length: 8 }, () => deliver(e)));
    expect(rs.filter((r) => r.body.effect === 'credits_granted')).toHaveLength(1);
    expect(await balance(a.apiKey)).toBe('0.6000');
  });

  test('bad signature, wrong secret, stale timestamp, tampered body, missing header: 400 and nothing changes', async () => {
    const { a, intent } = await paidCheckout(200);
    const good = fake.signedEvent('payment_intent.succeeded', intent);
    const cases = [
      deliver(good, good.header.replace(/v1=([0-9a-f])/, (_m, c) => `v1=${c === '0' ? '1' : '0'}`)),
      deliver(fake.signedEvent('payment_intent.succeeded', intent, { secret: 'whsec_other' })),
      deliver(fake.signedEvent('payment_intent.succeeded', intent, { timestamp: Math.floor(Date.now() / 1000) - 3600 })),
      deliver({ payload: good.payload.replace('"200"', '"20000"'), header: good.header }),
      t.request('POST', '/v1/billing/payment-processor/webhook', { body: good.payload, headers: { 'content-type': 'application/json' } }),
    ];
    for (const r of await Promise.all(cases)) {
      expect(r.status).toBe(400);
      expect(r.body.error_code).toBe('WEBHOOK_SIGNATURE_INVALID');
    }
    expect(await balance(a.apiKey)).toBe('0.0000');
    expect((await deliver(good)).status).toBe(200);
    expect(await balance(a.apiKey)).toBe('2.0000');
  });

  test('a signature dated in the future is refused like a stale one', async () => {
    const { a, intent } = await paidCheckout(200);
    const ahead = await deliver(fake.signedEvent('payment_intent.succeeded', intent, { timestamp: Math.floor(Date.now() / 1000) + 4000 }));
    expect(ahead.status).toBe(400);
    expect(ahead.body.error_code).toBe('WEBHOOK_SIGNATURE_INVALID');
    expect(ahead.body.message).toMatch(/future/);
    expect(await balance(a.apiKey)).toBe('0.0000');
    // Within the tolerance (a clock a little ahead) is fine.
    expect((await deliver(fake.signedEvent('payment_intent.succeeded', intent, { timestamp: Math.floor(Date.now() / 1000) + 60 }))).body.effect).toBe('credits_granted');
  });

  test('a header with two t= values is judged by the timestamp the signature covers, in either order', async () => {
    const { a, intent } = await paidCheckout(300);
    const now = Math.floor(Date.now() / 1000);
    const yearAhead = now + 365 * 24 * 3600;
    const tOf = (header: string) => /t=(\d+)/.exec(header)![1];
    const v1Of = (header: string) => /v1=([0-9a-f]+)/.exec(header)![1];
    // Signed a year ahead, with a current t= in front: the signature covers the later one.
    const ahead = fake.signedEvent('payment_intent.succeeded', intent, { timestamp: yearAhead });
    const refused = await deliver(ahead, `t=${now},t=${tOf(ahead.header)},v1=${v1Of(ahead.header)}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error_code).toBe('WEBHOOK_SIGNATURE_INVALID');
    expect(refused.body.message).toMatch(/future/);
    expect(await balance(a.apiKey)).toBe('0.0000');
    // Signed now, with a year-ahead t= in front: the signed (last) timestamp is current, so it passes.
    const current = fake.signedEvent('payment_intent.succeeded', intent, { timestamp: now });
    const accepted = await deliver(current, `t=${yearAhead},t=${tOf(current.header)},v1=${v1Of(current.header)}`);
    expect(accepted.status).toBe(200);
    expect(accepted.body.effect).toBe('credits_granted');
    expect(await balance(a.apiKey)).toBe('3.0000');
  });

  test('a signed intent is still checked against the payment: succeeded, paid in full for the credits, within the slider', async () => {
    const { a, intent } = await paidCheckout(500);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ status: 'requires_payment_method' }, /status is requires_payment_method/],
      [{ metadata: { ...intent.metadata, credits: '99999999' } }, /credits outside/],
      [{ metadata: { ...intent.metadata, credits: '600' } }, /does not pay for 600 credits/],
      [{ amount_received: 499 }, /does not pay for 500 credits/],
      [{ currency: 'eur' }, /does not pay/],
    ];
    for (const [change, reason] of cases) {
      const res = await deliver(fake.signedEvent('payment_intent.succeeded', { ...intent, ...change }));
      expect(res.status).toBe(200); // acknowledged, so the processor does not retry it
      expect(res.body.effect).toMatch(reason);
    }
    expect(await balance(a.apiKey)).toBe('0.0000');
    expect((await deliver(fake.signedEvent('payment_intent.succeeded', intent))).body.effect).toBe('credits_granted');
    expect(await balance(a.apiKey)).toBe('5.0000');
  });

  test('other purchase types and unknown events are acknowledged without a grant', async () => {
    const { a, intent } = await paidCheckout(100);
    const other = { ...intent, metadata: { ...intent.metadata, purchase_type: 'pack' } };
    expect((await deliver(fake.signedEvent('payment_intent.succeeded', other))).body.effect).toMatch(/not a credit purchase/);
    expect((await deliver(fake.signedEvent('charge.refunded', intent))).status).toBe(200);
    expect(await balance(a.apiKey)).toBe('0.0000');
  });

  test('a signed event naming an agent that does not exist (or a malformed id) records nothing', async () => {
    const { intent } = await paidCheckout(100);
    const db = billingModuleFor(t.config)!.store.db;
    const rows = async () => Number((await db.selectFrom('credit_lots').select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
      + Number((await db.selectFrom('billing_accounts').select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const before = await rows();
    for (const agent_id of ['00000000-0000-4000-8000-00000000dead', 'not-an-id']) {
      const orphan = { ...intent, id: `${intent.id}_${agent_id}`, metadata: { ...intent.metadata, agent_id } };
      const res = await deliver(fake.signedEvent('payment_intent.succeeded', orphan));
      expect(res.status).toBe(200);
      expect(res.body.effect).toBe('ignored: unknown agent');
    }
    expect(await rows()).toBe(before);
  });
});

describe('consent and auto top-up', () => {
  async function withConsent(pm = 'pm_card_visa', topup = 500) {
    const a = await t.registerAgent();
    const setup = await t.request('POST', '/v1/billing/setup', { token: a.apiKey, body: {} });
    const customer = setup.body.customer_id;
    expect((await deliver(fake.signedEvent('setup_intent.succeeded', { id: setup.body.setup_intent_id, object: 'setup_intent', customer, payment_method: pm, metadata: { agent_id: a.agentId } }))).body.effect).toBe('payment_method_stored');
    const consent = await deliver(fake.signedEvent('payment_consent.verified', { id: 'pcon_123', customer, metadata: { agent_id: a.agentId } }));
    expect(consent.body.effect).toBe('recharge_consent_stored');
    expect((await t.request('GET', '/v1/billing', { token: a.apiKey })).body.recharge_consent_id).toBe('pcon_123');
    const on = await t.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: { enabled: true, threshold_credits: 10, topup_credits: topup } });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ auto_topup: true, threshold_usd: '0.1000', topup_credits: topup });
    return a;
  }
  const offSession = () => fake.requests.filter((r) => r.path === '/v1/payment_intents' && r.form.off_session === 'true');
  // The refill runs after the charge's commit, off the caller's path: wait for what it does (bounded),
  // then a quiet spell in which a second, wrong charge would show.
  const settle = () => new Promise((r) => setTimeout(r, 150));
  const within = { timeout: 10_000, interval: 20 };

  test('one off-session charge per dip, never two; credits land once; the next dip refills again', async () => {
    const a = await withConsent('pm_card_visa', 50);
    await m.credits.add(a.agentId, { kind: 'grant', units: cr(14), ref: `seed:${a.agentId}` });
    await Promise.all(Array.from({ length: 20 }, () => m.metering.charge(a.agentId, 'browse_static'))); // floor
    const before = offSession().length;
    // 14 credits, 3 per browse: 11 → 8 (under 10: the dip) → 5 → 2, all in parallel
    const r1 = await Promise.allSettled(Array.from({ length: 6 }, () => m.metering.charge(a.agentId, 'browse_static')));
    const ok1 = r1.filter((x) => x.status === 'fulfilled').length;
    await expect.poll(() => balance(a.apiKey), within).toBe(((14 + 50 - 3 * ok1) / 100).toFixed(4));
    await settle();
    const charges = offSession().slice(before);
    expect(charges).toHaveLength(1);
    expect(charges[0].form).toMatchObject({ amount: '50', confirm: 'true', off_session: 'true', payment_method: 'pm_card_visa', metadata: { agent_id: a.agentId, purchase_type: 'auto_topup', credits: '50' } });
    expect(await balance(a.apiKey)).toBe(((14 + 50 - 3 * ok1) / 100).toFixed(4));
    // The webhook for the same intent grants nothing more.
    const pi = fake.intents.get([...fake.intents.keys()].at(-1)!);
    await deliver(fake.signedEvent('payment_intent.succeeded', pi));
    expect(await balance(a.apiKey)).toBe(((14 + 50 - 3 * ok1) / 100).toFixed(4));
    // Back above the threshold the dip is over: spending under it again refills once more.
    const r2 = await Promise.allSettled(Array.from({ length: 20 }, () => m.metering.charge(a.agentId, 'browse_static')));
    const ok2 = r2.filter((x) => x.status === 'fulfilled').length;
    await expect.poll(() => balance(a.apiKey), within).toBe(((14 + 100 - 3 * (ok1 + ok2)) / 100).toFixed(4));
    await settle();
    expect(offSession().length - before).toBe(2);
    expect(await balance(a.apiKey)).toBe(((14 + 100 - 3 * (ok1 + ok2)) / 100).toFixed(4));
  });

  test('a replayed older consent or card event does not put back what a newer one replaced', async () => {
    const a = await t.registerAgent();
    const setup = await t.request('POST', '/v1/billing/setup', { token: a.apiKey, body: {} });
    const customer = setup.body.customer_id;
    const old = fake.signedEvent('payment_consent.verified', { id: 'pcon_old', customer, metadata: { agent_id: a.agentId } });
    const oldCard = fake.signedEvent('setup_intent.succeeded', { id: 'seti_old', object: 'setup_intent', customer, payment_method: 'pm_old', metadata: { agent_id: a.agentId } });
    expect((await deliver(old)).body.effect).toBe('recharge_consent_stored');
    expect((await deliver(oldCard)).body.effect).toBe('payment_method_stored');
    await deliver(fake.signedEvent('payment_consent.verified', { id: 'pcon_new', customer, metadata: { agent_id: a.agentId } }));
    await deliver(fake.signedEvent('setup_intent.succeeded', { id: 'seti_new', object: 'setup_intent', customer, payment_method: 'pm_new', metadata: { agent_id: a.agentId } }));
    expect((await deliver(old)).body.effect).toBe('duplicate');
    expect((await deliver(oldCard)).body.effect).toBe('duplicate');
    const snap = (await t.request('GET', '/v1/billing', { token: a.apiKey })).body;
    expect(snap.recharge_consent_id).toBe('pcon_new');
    const account = (await t.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: { enabled: false } })).body;
    expect(account).toMatchObject({ payment_method_id: 'pm_new', recharge_consent_id: 'pcon_new' });
  });

  test('a declined off-session charge is not retried within the dip', async () => {
    const a = await withConsent(DECLINED_PM);
    await m.credits.add(a.agentId, { kind: 'grant', units: cr(4), ref: `seed:${a.agentId}` });
    const before = offSession().length;
    await Promise.all(Array.from({ length: 20 }, () => m.metering.charge(a.agentId, 'browse_static')));
    await m.metering.charge(a.agentId, 'browse_static'); // 4 → 1: dip
    await expect.poll(() => offSession().length - before, within).toBe(1);
    await settle();
    await expect(m.metering.charge(a.agentId, 'browse_static')).rejects.toMatchObject({ code: 'INSUFFICIENT_CREDITS' });
    await settle();
    expect(offSession().length - before).toBe(1);
    expect(await balance(a.apiKey)).toBe('0.0100');
  });
});
