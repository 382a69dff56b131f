/**
 * Billing audit over HTTP (both engines): free-floor edge of the rolling window, prices past the
 * floor, expiring grants spent before purchased credit, refunds of failed searches, parallel paid
 * calls at the last credit, checkout input bounds: regression checks of the API's limit and
 * billing rules.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { credits as cr } from '../src/lib/money';
import { billingModuleFor, type BillingModule } from '../src/modules/billing/module';
import { startBraveFake } from './fakes/search-providers';
import { startStripeFake, stripeEnv, type StripeFake } from './fakes/stripe';
import { startWebApp, type WebApp } from './search-support';

const DAY = 86_400_000;
let w: WebApp;
let fake: StripeFake;
let brave: Awaited<ReturnType<typeof startBraveFake>>;
let m: BillingModule;
beforeAll(async () => {
  fake = await startStripeFake();
  brave = await startBraveFake({ apiKey: 'brave-key' });
  w = await startWebApp({ ...stripeEnv(fake), SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'brave-key', SVC_BRAVE_URL: brave.url });
  m = billingModuleFor(w.config)!;
});
afterAll(async () => {
  await w?.close();
  await brave?.close();
  await fake?.close();
});

const search = (token: string, q = 'audit') => w.request('GET', `/v1/search?q=${encodeURIComponent(q)}&num_results=3`, { token });

describe('billing audit over HTTP', () => {
  test('search floor: 50 free per rolling 30 days; the first call frees its slot at exactly +30 days, not 1 ms earlier', async () => {
    const a = await w.agent();
    w.clock.set(Date.UTC(2027, 0, 3, 10));
    const t0 = w.clock.now();
    for (let i = 0; i < 50; i++) {
      expect((await search(a.token)).status, `call ${i}`).toBe(200);
      w.clock.advance(1000);
    }
    const over = await search(a.token);
    expect(over.status).toBe(402);
    expect(over.body).toMatchObject({ error_code: 'INSUFFICIENT_CREDITS', upgrade_url: expect.any(String) });
    w.clock.set(t0 + 30 * DAY - 1);
    expect((await search(a.token)).status).toBe(402);
    w.clock.set(t0 + 30 * DAY);
    const ok = await search(a.token);
    expect(ok.status).toBe(200);
    expect(ok.body._svc.usage.credits_remaining_usd).toBe('0.0000');
    expect((await search(a.token)).status).toBe(402); // only one call aged out
    const snap = (await w.request('GET', '/v1/billing', { token: a.token })).body;
    const usage = (await w.request('GET', '/v1/usage', { token: a.token })).body;
    expect(snap).toMatchObject({ search_calls_this_month: 1, calls_total: 1, search_calls_remaining: 0, credits_remaining_usd: '0.0000' });
    expect(usage.pools.search).toMatchObject({ calls_this_month: 1, free_remaining_30d: 0 });
    expect(ok.body.usage).toMatchObject({ calls_total: 1, calls_remaining: null, search_quota_period: 'trial_credits', search_calls_limit: 50 });
  });

  test('past the floor: 2 credits a search, expiring grant first, then purchased credit; credits_expire_at follows', async () => {
    const a = await w.agent();
    const expires = w.clock.now() + 10 * DAY;
    await m.credits.add(a.id, { kind: 'grant', units: cr(3), ref: `g:${a.id}`, expiresAt: expires });
    await m.credits.add(a.id, { kind: 'purchase', units: cr(5), ref: `p:${a.id}` });
    for (let i = 0; i < 50; i++) await m.metering.charge(a.id, 'search');
    const r1 = await search(a.token);
    expect(r1.body._svc.usage).toMatchObject({ credits_remaining_usd: '0.0600', credits_expire_at: new Date(expires).toISOString() });
    const r2 = await search(a.token);
    expect(r2.body._svc.usage).toMatchObject({ credits_remaining_usd: '0.0400', credits_expire_at: null });
    const snap = (await w.request('GET', '/v1/billing', { token: a.token })).body;
    expect(snap).toMatchObject({ credits_remaining_usd: '0.0400', credits_expire_at: null });
    for (let i = 0; i < 20; i++) expect((await m.metering.charge(a.id, 'browse_static')).free).toBe(true);
    await expect(m.metering.charge(a.id, 'browse_dynamic')).rejects.toMatchObject({ status: 402, code: 'INSUFFICIENT_CREDITS' });
    expect((await m.metering.charge(a.id, 'browse_static')).costUnits).toBe(cr(3));
  });

  test('a failed search is refunded; parallel paid searches at the last credit never overdraw', async () => {
    const a = await w.agent();
    await m.credits.add(a.id, { kind: 'purchase', units: cr(41), ref: `p:${a.id}` });
    for (let i = 0; i < 49; i++) expect((await search(a.token, `x${i}`)).status).toBe(200);
    brave.mode = 'http500';
    expect((await search(a.token, 'fails')).status).toBeGreaterThanOrEqual(500);
    brave.mode = 'ok';
    const rs = await Promise.all(Array.from({ length: 40 }, (_, i) => search(a.token, `p${i % 3}`)));
    expect(rs.filter((r) => r.status === 200)).toHaveLength(21); // the refunded free call, then 20 paid
    expect(rs.filter((r) => r.status === 402)).toHaveLength(19);
    const snap = (await w.request('GET', '/v1/billing', { token: a.token })).body;
    expect(snap).toMatchObject({ credits_remaining_usd: '0.0100', search_calls_this_month: 70 });
    expect(await m.credits.ledgerBalance(a.id)).toBe(cr(1));
  });

  test('checkout: credits bounds and types give 422, amount agrees with total_usd', async () => {
    const a = await w.agent();
    for (const credits of [49, 1_000_001, '100', 50.5, null, -1, 1e300]) {
      const r = await w.request('POST', '/v1/billing/credits/checkout', { token: a.token, body: { credits } });
      expect(r.status, String(credits)).toBe(422);
      expect(r.body.error_code).toBe('INVALID_CREDIT_AMOUNT');
    }
    for (const [credits, cents, rate] of [[50, 50, '0.0100'], [1001, 951, '0.0095'], [1_000_000, 800_000, '0.0080']] as const) {
      const r = await w.request('POST', '/v1/billing/credits/checkout', { token: a.token, body: { credits } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ credits, amount: cents, currency: 'usd', unit_rate_usd: rate });
      expect(Math.round(Number(r.body.total_usd) * 100)).toBe(r.body.amount);
      expect(r.body.total_usd).toMatch(/^\d+\.\d{4}$/);
    }
  });
});
