import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { credits as cr } from '../src/lib/money';
import { billingModuleFor } from '../src/modules/billing/module';
import { CREDIT_SLIDER, quoteCredits } from '../src/modules/billing/pricing';
import { startTestApp, type TestApp } from './helpers/harness';
import { FAKE_PUBLISHABLE_KEY, startStripeFake, stripeEnv, type StripeFake } from './fakes/stripe';

let t: TestApp; // billing configured against the Stripe fake
let bare: TestApp; // billing not configured
let fake: StripeFake;
beforeAll(async () => {
  fake = await startStripeFake();
  t = await startTestApp({ env: { ...stripeEnv(fake), SVC_BASE_URL: 'http://svc.test' } });
  bare = await startTestApp();
});
afterAll(async () => {
  await t?.close();
  await bare?.close();
  await fake?.close();
});

const SNAPSHOT_FIELDS = [
  'tier', 'credits_remaining_usd', 'credits_expire_at', 'tier_label', 'auto_topup', 'over_limit', 'calls_total', 'call_limit',
  'payment_customer_id', 'payment_processor', 'recharge_consent_id', 'search_calls_this_month', 'search_calls_limit',
  'search_calls_remaining', 'search_overage_rate_per_call', 'memory_ops_this_month', 'memory_ops_limit', 'memory_storage_bytes',
  'blob_embed_storage_bytes', 'combined_memory_storage_bytes', 'memory_storage_limit_bytes', 'blob_storage_bytes',
  'blob_storage_limit_bytes', 'browse_calls_this_month', 'parse_ops_this_month', 'parse_ops_lifetime',
];

describe('GET /v1/billing', () => {
  test('every field of the snapshot, consistent with metering', async () => {
    const a = await t.registerAgent();
    const m = billingModuleFor(t.config)!;
    await m.credits.add(a.agentId, { kind: 'grant', units: cr(7), expiresAt: t.clock.now() + 86_400_000, ref: `g:${a.agentId}` });
    await m.metering.charge(a.agentId, 'search');
    await m.metering.charge(a.agentId, 'browse_static');
    await m.metering.charge(a.agentId, 'parse');
    const put = await t.request('PUT', '/v1/memory/k1', { token: a.apiKey, body: { value: { x: 1 } } });
    expect(put.status).toBe(200);
    const res = await t.request('GET', '/v1/billing', { token: a.apiKey });
    expect(res.status).toBe(200);
    for (const f of SNAPSHOT_FIELDS) expect(res.body, f).toHaveProperty(f);
    expect(res.body).toMatchObject({
      tier: 'free', tier_label: 'Free', credits_remaining_usd: '0.0700', auto_topup: false, over_limit: false,
      credits_expire_at: new Date(t.clock.now() + 86_400_000).toISOString(), payment_processor: 'stripe',
      search_calls_this_month: 1, calls_total: 1, search_calls_limit: 50, search_calls_remaining: 49, call_limit: 50,
      search_overage_rate_per_call: '0.0200', memory_ops_this_month: 1, memory_ops_limit: 1000,
      browse_calls_this_month: 1, parse_ops_this_month: 1, parse_ops_lifetime: 1, quota_period: 'rolling_30_days',
      memory_writes_free_remaining: 999, memory_storage_limit_bytes: 5 * 1024 * 1024,
    });
    expect(res.body.credits_remaining_usd).toMatch(/^\d+\.\d{4}$/);
  });

  test('over_limit turns true at the monthly memory write cap on the credit-metered free tier too', async () => {
    const a = await t.registerAgent();
    expect((await t.request('PUT', '/v1/memory/k1', { token: a.apiKey, body: { value: 1 } })).status).toBe(200);
    const before = await t.request('GET', '/v1/billing', { token: a.apiKey });
    expect(before.body).toMatchObject({ over_limit: false, memory_ops_this_month: 1 });
    // 1,000 writes this month (the free tier's cap; memory answers 429 MEMORY_OPS_LIMIT past it), as billing counts them.
    await billingModuleFor(t.config)!.store.db.updateTable('metering_daily').set({ count: 1000 })
      .where('agent_id', '=', a.agentId).where('pool', '=', 'memory_write').execute();
    const at = await t.request('GET', '/v1/billing', { token: a.apiKey });
    expect(at.body).toMatchObject({ over_limit: true, memory_ops_this_month: 1000 });
  });

  test('_svc.usage snapshot from the metering service', async () => {
    const a = await t.registerAgent();
    const u = await billingModuleFor(t.config)!.metering.usage(a.agentId);
    expect(Object.keys(u).sort()).toEqual(['auto_topup', 'browse_calls_remaining', 'commons_contributions', 'commons_size', 'commons_url', 'credits_expire_at', 'credits_remaining_usd', 'credits_staked_usd', 'tier_label'].sort());
    // app.ts feeds the commons module's real figures: an empty commons, nothing contributed.
    expect(u).toMatchObject({ credits_remaining_usd: '0.0000', browse_calls_remaining: 20, commons_url: 'http://svc.test/v1/commons/entries', commons_size: 0, commons_contributions: 0 });
    billingModuleFor(t.config)!.setCommons({ stats: async () => ({ size: 12, contributions: 3 }) });
    expect(await billingModuleFor(t.config)!.metering.usage(a.agentId)).toMatchObject({ commons_size: 12, commons_contributions: 3 });
  });

  test('security: no key, wrong key → 401 INVALID_API_KEY', async () => {
    for (const token of [undefined, 'svc_wrong']) {
      const res = await t.request('GET', '/v1/billing', token ? { token } : {});
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('INVALID_API_KEY');
    }
  });
});

describe('GET /v1/billing/config', () => {
  test('configured and not configured', async () => {
    const res = await t.request('GET', '/v1/billing/config');
    expect(res.body).toMatchObject({ payment_processor: 'stripe', publishable_key: FAKE_PUBLISHABLE_KEY, billing_page_url: 'http://svc.test/billing', js_env: 'test' });
    const b = await bare.request('GET', '/v1/billing/config');
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ payment_processor: null, publishable_key: null, js_env: 'unconfigured' });
  });
});

describe('POST /v1/billing/credits/checkout', () => {
  test('creates a PaymentIntent through the stripe SDK with slider pricing', async () => {
    const a = await t.registerAgent();
    const res = await t.request('POST', '/v1/billing/credits/checkout', { token: a.apiKey, body: { credits: 1001 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ currency: 'usd', amount: 951, credits: 1001, unit_rate_usd: '0.0095', total_usd: '9.5100' });
    expect(res.body.intent_id).toMatch(/^pi_/);
    expect(res.body.client_secret).toMatch(new RegExp(`^${res.body.intent_id}_secret_`));
    expect(res.body.customer_id).toMatch(/^cus_/);
    expect(res.body.billing_page_url).toBe(`http://svc.test/billing#client_secret=${res.body.client_secret}`);
    const sent = fake.requests.filter((r) => r.path === '/v1/payment_intents').at(-1)!;
    expect(sent.form).toMatchObject({ amount: '951', currency: 'usd', customer: res.body.customer_id, metadata: { agent_id: a.agentId, purchase_type: 'slider', credits: '1001' } });
    // the customer is created once per agent
    const again = await t.request('POST', '/v1/billing/credits/checkout', { token: a.apiKey, body: { credits: 50 } });
    expect(again.body.customer_id).toBe(res.body.customer_id);
    expect(again.body).toMatchObject({ amount: 50, total_usd: '0.5000', unit_rate_usd: '0.0100' });
    expect((await t.request('GET', '/v1/billing', { token: a.apiKey })).body.payment_customer_id).toBe(res.body.customer_id);
  });

  test('slider bands', () => {
    expect(CREDIT_SLIDER.map((b) => b.unit_rate_units)).toEqual([100, 95, 90, 85, 80]);
    expect(quoteCredits(999)).toMatchObject({ total_usd: '9.9900', amount_cents: 999 });
    expect(quoteCredits(5000)).toMatchObject({ unit_rate_usd: '0.0090', total_usd: '45.0000' });
    expect(quoteCredits(100_000)).toMatchObject({ unit_rate_usd: '0.0080', total_usd: '800.0000' });
  });

  test.each([[49], [0], [1_000_001], [1.5], ['lots']])('credits %s → 422 INVALID_CREDIT_AMOUNT', async (credits) => {
    const a = await t.registerAgent();
    const res = await t.request('POST', '/v1/billing/credits/checkout', { token: a.apiKey, body: { credits } });
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('INVALID_CREDIT_AMOUNT');
  });

  test('unconfigured: 503 BILLING_NOT_CONFIGURED with a pricing preview and no charge', async () => {
    const a = await bare.registerAgent();
    const res = await bare.request('POST', '/v1/billing/credits/checkout', { token: a.apiKey, body: { credits: 5000 } });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error_code: 'BILLING_NOT_CONFIGURED', pricing_preview: { credits: 5000, unit_rate_usd: '0.0090', total_usd: '45.0000', currency: 'usd' } });
    expect(res.body.pricing.credit_slider.bands).toHaveLength(5);
    expect((await bare.request('GET', '/v1/billing', { token: a.apiKey })).body.credits_remaining_usd).toBe('0.0000');
  });

  test('no key → 401', async () => {
    expect((await t.request('POST', '/v1/billing/credits/checkout', { body: { credits: 100 } })).status).toBe(401);
  });
});

describe('retired, setup and auto top-up', () => {
  test('POST /v1/billing/packs/checkout → 410 PACK_CHECKOUT_RETIRED', async () => {
    const a = await t.registerAgent();
    const res = await t.request('POST', '/v1/billing/packs/checkout', { token: a.apiKey, body: {} });
    expect(res.status).toBe(410);
    expect(res.body.error_code).toBe('PACK_CHECKOUT_RETIRED');
    expect((await t.request('POST', '/v1/billing/packs/checkout', { body: {} })).status).toBe(401);
  });

  test('POST /v1/billing/setup: a SetupIntent for off-session use', async () => {
    const a = await t.registerAgent();
    const res = await t.request('POST', '/v1/billing/setup', { token: a.apiKey, body: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ amount: 0, currency: 'usd' });
    expect(res.body.setup_intent_id).toMatch(/^seti_/);
    expect(res.body.billing_page_url).toContain('#mode=setup&client_secret=seti_');
    const sent = fake.requests.filter((r) => r.path === '/v1/setup_intents').at(-1)!;
    expect(sent.form).toMatchObject({ usage: 'off_session', customer: res.body.customer_id, metadata: { agent_id: a.agentId } });
    const b = await bare.registerAgent();
    expect((await bare.request('POST', '/v1/billing/setup', { token: b.apiKey, body: {} })).body.error_code).toBe('BILLING_NOT_CONFIGURED');
    // The request has no body: a call with no body at all works the same.
    const none = await t.request('POST', '/v1/billing/setup', { token: a.apiKey });
    expect(none.status).toBe(200);
    expect(none.body.setup_intent_id).toMatch(/^seti_/);
    expect((await bare.request('POST', '/v1/billing/setup', { token: b.apiKey })).body.error_code).toBe('BILLING_NOT_CONFIGURED');
  });

  test('POST /v1/billing/auto-topup needs a saved card and a recharge consent', async () => {
    const a = await t.registerAgent();
    const on = { enabled: true, threshold_credits: 100, topup_credits: 500 };
    let res = await t.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: on });
    expect(res.status).toBe(409);
    expect(res.body.error_code).toBe('PAYMENT_METHOD_REQUIRED');
    const m = billingModuleFor(t.config)!;
    await m.store.withLocks([a.agentId], t.clock.now(), (trx) => m.store.updateAccount(trx, a.agentId, { payment_method_id: 'pm_x' }, t.clock.now()));
    res = await t.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: on });
    expect(res.body.error_code).toBe('RECHARGE_CONSENT_REQUIRED');
    const off = await t.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: { enabled: false } });
    expect(off.status).toBe(200);
    expect(off.body.auto_topup).toBe(false);
    expect((await t.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: { enabled: 'yes' } })).status).toBe(422);
    expect((await t.request('POST', '/v1/billing/auto-topup', { body: on })).status).toBe(401);
  });
});
