/**
 * The billing routes' error codes that no other file covers (each route, each code it can give):
 * POST /admin/billing/grants (grant lands, 404 AGENT_NOT_FOUND also for an unregistered agent, 422 VALIDATION_FAILED, 401),
 * 502 PAYMENT_PROCESSOR_ERROR of checkout and setup when Stripe fails (a loopback Stripe that answers
 * Stripe-shaped 500s: the fake in test/fakes/stripe.ts cannot be told to fail), 422 VALIDATION_FAILED
 * of setup (a body that is not an object; unknown fields are dropped, never forwarded) and auto top-up, 503 BILLING_NOT_CONFIGURED of the webhook and of enabling auto top-up, and 402 INSUFFICIENT_CREDITS
 * of GET /v1/blobs/search over HTTP (with the embeddings fake, past the free search floor).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { billingModuleFor } from '../src/modules/billing/module';
import { FREE_FLOORS } from '../src/modules/billing/pricing';
import { startTestApp, type TestApp } from './helpers/harness';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { FAKE_PUBLISHABLE_KEY, FAKE_SECRET_KEY, FAKE_WEBHOOK_SECRET } from './fakes/stripe';
import { csvText } from './fixtures/documents';

/**
 * Stripe having an outage: every request is a 500 `api_error` in Stripe's error shape, except
 * customer creation while `customersUp` (to reach the payment and setup intent calls).
 */
interface DownStripe { url: string; customersUp: boolean; paths: string[]; bodies: string[]; close(): Promise<void> }

async function startDownStripe(): Promise<DownStripe> {
  const state = { customersUp: false, paths: [] as string[], bodies: [] as string[] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.bodies.push(Buffer.concat(chunks).toString('utf8'));
      const path = (req.url ?? '/').split('?')[0];
      state.paths.push(path);
      const ok = state.customersUp && req.method === 'POST' && path === '/v1/customers';
      res.writeHead(ok ? 200 : 500, { 'content-type': 'application/json', 'request-id': `req_${state.paths.length}` });
      res.end(JSON.stringify(ok
        ? { id: `cus_down${state.paths.length}`, object: 'customer', metadata: {}, livemode: false }
        : { error: { type: 'api_error', message: 'An unknown error occurred' } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  });
}

let stripe: DownStripe;
let embeddings: FakeEmbeddingsServer;
let t: TestApp; // billing configured, against the failing Stripe; blob search on the embeddings fake
let bare: TestApp; // billing not configured
beforeAll(async () => {
  stripe = await startDownStripe();
  embeddings = await startFakeEmbeddings({ dimensions: 64 });
  t = await startTestApp({
    env: {
      STRIPE_SECRET_KEY: FAKE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY: FAKE_PUBLISHABLE_KEY, STRIPE_WEBHOOK_SECRET: FAKE_WEBHOOK_SECRET,
      SVC_STRIPE_API_BASE: stripe.url, SVC_BASE_URL: 'http://svc.test',
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: embeddings.url, SVC_EMBEDDINGS_MODEL: 'fake-embed', SVC_EMBEDDINGS_DIMENSIONS: '64',
    },
  });
  bare = await startTestApp({ env: { SVC_EMBEDDINGS: 'none' } });
});
afterAll(async () => {
  await t?.close();
  await bare?.close();
  await embeddings?.close();
  await stripe?.close();
});

const ADMIN = { 'x-admin-key': 'test-admin-key' };
const grant = (body: unknown, headers: Record<string, string> = ADMIN) => t.request('POST', '/admin/billing/grants', { body, headers });
const snapshot = async (token: string) => (await t.request('GET', '/v1/billing', { token })).body;

describe('POST /admin/billing/grants', () => {
  test('the grant lands in the agent\'s balance, once per reference; expires_in_days sets the expiry', async () => {
    const a = await t.registerAgent();
    const res = await grant({ agent_id: a.agentId, credits: 250, reference: 'welcome' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', granted: true, credits_remaining_usd: '2.5000' });
    expect(await snapshot(a.apiKey)).toMatchObject({ credits_remaining_usd: '2.5000', credits_expire_at: null });
    // The same reference grants once.
    const again = await grant({ agent_id: a.agentId, credits: 250, reference: 'welcome' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ granted: false, credits_remaining_usd: '2.5000' });
    const expiring = await grant({ agent_id: a.agentId.toUpperCase(), credits: 100, reference: 'promo', expires_in_days: 7 });
    expect(expiring.body).toMatchObject({ granted: true, credits_remaining_usd: '3.5000' });
    expect(await snapshot(a.apiKey)).toMatchObject({
      credits_remaining_usd: '3.5000', credits_expire_at: new Date(t.clock.now() + 7 * 86_400_000).toISOString(),
    });
  });

  test('404 AGENT_NOT_FOUND for an agent id that is not a UUID', async () => {
    const res = await grant({ agent_id: 'nobody', credits: 100, reference: 'r-nobody' });
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('AGENT_NOT_FOUND');
  });

  test('404 AGENT_NOT_FOUND for a well-formed id of no registered agent; no account or credit is recorded for it', async () => {
    const nobody = randomUUID();
    const res = await grant({ agent_id: nobody, credits: 100, reference: 'r-unregistered' });
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('AGENT_NOT_FOUND');
    const m = billingModuleFor(t.config)!;
    expect(await m.store.getAccount(nobody)).toBeUndefined();
  });

  test.each([
    ['no reference', (id: string) => ({ agent_id: id, credits: 100 })],
    ['empty reference', (id: string) => ({ agent_id: id, credits: 100, reference: '' })],
    ['no agent_id', () => ({ credits: 100, reference: 'r' })],
    ['credits 0', (id: string) => ({ agent_id: id, credits: 0, reference: 'r' })],
    ['fractional credits', (id: string) => ({ agent_id: id, credits: 1.5, reference: 'r' })],
    ['credits as text', (id: string) => ({ agent_id: id, credits: 'lots', reference: 'r' })],
    ['expires_in_days 0', (id: string) => ({ agent_id: id, credits: 100, reference: 'r', expires_in_days: 0 })],
  ])('422 VALIDATION_FAILED: %s; nothing granted', async (_what, body) => {
    const a = await t.registerAgent();
    const res = await grant(body(a.agentId));
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('VALIDATION_FAILED');
    expect((await snapshot(a.apiKey)).credits_remaining_usd).toBe('0.0000');
  });

  test('an unknown field is dropped before the handler (as on every route), not refused: the grant lands', async () => {
    const a = await t.registerAgent();
    const res = await grant({ agent_id: a.agentId, credits: 100, reference: 'extra', note: 'x' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ granted: true, credits_remaining_usd: '1.0000' });
  });

  test('401 INVALID_ADMIN_KEY without the admin key, or with an agent\'s key; nothing granted', async () => {
    const a = await t.registerAgent();
    const body = { agent_id: a.agentId, credits: 100, reference: 'self-service' };
    for (const headers of [{}, { 'x-admin-key': 'wrong' }, { authorization: `Bearer ${a.apiKey}` }] as Record<string, string>[]) {
      const res = await grant(body, headers);
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('INVALID_ADMIN_KEY');
    }
    expect((await snapshot(a.apiKey)).credits_remaining_usd).toBe('0.0000');
  });
});

describe('502 PAYMENT_PROCESSOR_ERROR when Stripe fails', () => {
  test.each([
    ['/v1/billing/credits/checkout', { credits: 500 }, false, '/v1/customers'],
    ['/v1/billing/credits/checkout', { credits: 500 }, true, '/v1/payment_intents'],
    ['/v1/billing/setup', {}, false, '/v1/customers'],
    ['/v1/billing/setup', {}, true, '/v1/setup_intents'],
  ] as const)('POST %s %o, customers up: %s → 502 at %s; nothing granted', async (path, body, customersUp, failedAt) => {
    const a = await t.registerAgent();
    stripe.customersUp = customersUp;
    const before = stripe.paths.length;
    try {
      const res = await t.request('POST', path, { token: a.apiKey, body });
      expect(res.status).toBe(502);
      expect(res.body.error_code).toBe('PAYMENT_PROCESSOR_ERROR');
      expect(res.body.message).toMatch(/payment processor error/);
    } finally {
      stripe.customersUp = false;
    }
    expect(stripe.paths.slice(before)).toContain(failedAt);
    const snap = await snapshot(a.apiKey);
    expect(snap.credits_remaining_usd).toBe('0.0000');
    // The customer is saved only when Stripe created it.
    if (customersUp) expect(snap.payment_customer_id).toMatch(/^cus_down/);
    else expect(snap.payment_customer_id).toBeNull();
  });
});

describe('POST /v1/billing/setup', () => {
  test('unknown body fields are dropped before the handler: a card number sent to svc never reaches Stripe', async () => {
    const a = await t.registerAgent();
    stripe.customersUp = true;
    const before = stripe.bodies.length;
    try {
      const res = await t.request('POST', '/v1/billing/setup', { token: a.apiKey, body: { card_number: '4242424242424242' } });
      // The setup went on to Stripe (which is down here) without the field.
      expect(res.status).toBe(502);
      expect(res.body.error_code).toBe('PAYMENT_PROCESSOR_ERROR');
    } finally {
      stripe.customersUp = false;
    }
    const sent = stripe.bodies.slice(before);
    expect(stripe.paths.slice(before)).toContain('/v1/setup_intents');
    expect(sent.join('\n')).not.toMatch(/4242|card_number/);
  });

  test('422 VALIDATION_FAILED for a body that is not an object, before any call to Stripe', async () => {
    const a = await t.registerAgent();
    const before = stripe.paths.length;
    for (const body of ['[]', '"card"', '42']) {
      const res = await t.request('POST', '/v1/billing/setup', { token: a.apiKey, body, headers: { 'content-type': 'application/json' } });
      expect(res.status, body).toBe(422);
      expect(res.body.error_code).toBe('VALIDATION_FAILED');
    }
    expect(stripe.paths.length).toBe(before);
  });
});

describe('POST /v1/billing/auto-topup', () => {
  test('503 BILLING_NOT_CONFIGURED when enabling on a host without a payment processor; disabling still answers', async () => {
    const a = await bare.registerAgent();
    const on = await bare.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: { enabled: true, threshold_credits: 100, topup_credits: 500 } });
    expect(on.status).toBe(503);
    expect(on.body.error_code).toBe('BILLING_NOT_CONFIGURED');
    expect((await bare.request('GET', '/v1/billing', { token: a.apiKey })).body.auto_topup).toBe(false);
    const off = await bare.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: { enabled: false } });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ status: 'success', auto_topup: false, threshold_credits: null, topup_credits: null });
  });

  test('422 VALIDATION_FAILED for enabled: true without threshold_credits or topup_credits; nothing enabled', async () => {
    const a = await t.registerAgent();
    const m = billingModuleFor(t.config)!;
    // A saved card and a recharge consent, as the webhook would store them (past the 409s).
    await m.store.withLocks([a.agentId], t.clock.now(), (trx) =>
      m.store.updateAccount(trx, a.agentId, { payment_method_id: 'pm_saved', recharge_consent_id: 'seti_consent' }, t.clock.now()));
    for (const body of [{ enabled: true }, { enabled: true, threshold_credits: 100 }, { enabled: true, topup_credits: 500 }]) {
      const res = await t.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error_code).toBe('VALIDATION_FAILED');
      expect((await snapshot(a.apiKey)).auto_topup).toBe(false);
    }
    const on = await t.request('POST', '/v1/billing/auto-topup', { token: a.apiKey, body: { enabled: true, threshold_credits: 100, topup_credits: 500 } });
    expect(on.status).toBe(200);
    expect((await snapshot(a.apiKey)).auto_topup).toBe(true);
  });
});

describe('POST /v1/billing/payment-processor/webhook', () => {
  test('503 BILLING_NOT_CONFIGURED on a host without Stripe keys, signed or not', async () => {
    const payload = JSON.stringify({ id: 'evt_1', object: 'event', type: 'payment_intent.succeeded', data: { object: { id: 'pi_1' } } });
    for (const headers of [{ 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' }, { 'content-type': 'application/json' }] as Record<string, string>[]) {
      const res = await bare.request('POST', '/v1/billing/payment-processor/webhook', { body: payload, headers });
      expect(res.status).toBe(503);
      expect(res.body.error_code).toBe('BILLING_NOT_CONFIGURED');
    }
  });
});

describe('GET /v1/blobs/search', () => {
  test('402 INSUFFICIENT_CREDITS past the free search floor without credit, before any embedding request; answered once credit is granted', async () => {
    const a = await t.registerAgent();
    const up = await t.request('PUT', '/v1/blobs', {
      token: a.apiKey, body: Buffer.from(csvText([['region', 'note'], ['north', 'revenue grew in every region']])), headers: { 'content-type': 'text/csv' },
    });
    expect(up.status).toBe(201);
    const parsed = await t.request('POST', `/v1/blobs/${up.body.blob_id}/parse`, { token: a.apiKey });
    expect(parsed.body.status).toBe('complete');
    // Use up the free floor of the search pool (blob search shares it) through the app's own metering.
    const m = billingModuleFor(t.config)!;
    for (let i = 0; i < FREE_FLOORS.search!; i++) expect((await m.metering.charge(a.agentId, 'blob_search')).free).toBe(true);

    // Requests that embed the query itself (the blob's own chunks may still be embedded in the background).
    const queryEmbeddings = () => embeddings.requests.filter((r) => [r.body.input].flat().includes('revenue grew')).length;
    const q = `/v1/blobs/search?q=${encodeURIComponent('revenue grew')}&threshold=0`;
    const refused = await t.request('GET', q, { token: a.apiKey });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({
      error_code: 'INSUFFICIENT_CREDITS', upgrade_url: 'http://svc.test/billing', price_usd: '0.0200', credits_remaining_usd: '0.0000',
    });
    expect(queryEmbeddings()).toBe(0);

    expect((await grant({ agent_id: a.agentId, credits: 10, reference: 'blob-search' })).status).toBe(200);
    const ok = await t.request('GET', q, { token: a.apiKey });
    expect(ok.status).toBe(200);
    expect(ok.body.results.map((r: any) => r.blob_id)).toContain(up.body.blob_id);
    expect(queryEmbeddings()).toBe(1);
    expect((await snapshot(a.apiKey)).credits_remaining_usd).toBe('0.0800');
  });
});
