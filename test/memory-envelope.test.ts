import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_EMBEDDINGS: 'none' } });
});
afterAll(async () => t?.close());

test('a memory write is metered: its response carries _svc with billing usage and commons figures', async () => {
  const a = await t.registerAgent();
  const res = await t.request('PUT', '/v1/memory/envelope.check', { token: a.apiKey, body: { value: { x: 1 } } });
  expect(res.status).toBe(200);
  expect(res.body.usage).toMatchObject({ ops_this_month: 1 });
  const svc = res.body._svc;
  expect(svc.register_url).toContain('/v1/register');
  expect(svc.usage).toMatchObject({ credits_remaining_usd: '0.0000', tier_label: 'Free', auto_topup: false, credits_expire_at: null });
  expect(svc.usage.commons_size).toBe(0);
  expect(svc.usage.commons_contributions).toBe(0);
  expect(typeof svc.usage.browse_calls_remaining).toBe('number');
  // Reads are not metered: no _svc on GET.
  const get = await t.request('GET', '/v1/memory/envelope.check', { token: a.apiKey });
  expect(get.body._svc).toBeUndefined();
});

test('a credit purchase lifts the stored tier: /v1/me and memory limits follow the billed tier', async () => {
  const { billingModuleFor } = await import('../src/modules/billing/module');
  const a = await t.registerAgent();
  const before = await t.request('PUT', '/v1/memory/tier.check', { token: a.apiKey, body: { value: 1 } });
  expect(before.body.usage.ops_remaining).toBe(999);
  await billingModuleFor(t.config)!.credits.add(a.agentId, { kind: 'purchase', units: 1_000_000, ref: `test-purchase-${a.agentId}` });
  const me = await t.request('GET', '/v1/me', { token: a.apiKey });
  expect(me.body.tier).toBe('mission'); // 100 USD of lifetime purchases reaches mission (docs/billing.md)
  const after = await t.request('PUT', '/v1/memory/tier.check', { token: a.apiKey, body: { value: 2 } });
  expect(after.status).toBe(200);
  expect(after.body._svc.usage.tier_label).toBe(me.body.tier_label);
});
