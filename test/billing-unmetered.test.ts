import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { credits } from '../src/lib/money';
import { tierOf } from '../src/lib/tiers';
import { billingModuleFor } from '../src/modules/billing/module';
import { FLOOR_WINDOW_MS } from '../src/modules/billing/pricing';
import { html, startWebServer, text, type FakeWebServer } from './fakes/web-server';
import { startBraveFake, type FakeSearchProvider } from './fakes/search-providers';
import { setDailyCount, startWebApp, type WebApp } from './search-support';

/**
 * SVC_METERING_ENABLED=false (private self-hosting): every metered action is free and uncounted,
 * billing writes nothing, and responses still carry `_svc.usage` as billing's tables hold it; the
 * figures are kept per agent and read again when a write, a tier change, a new UTC day, a lot's
 * expiry or a free call leaving the window could have changed them (src/modules/billing/unmetered.ts).
 */
let brave: FakeSearchProvider;
let site: FakeWebServer;
let w: WebApp;

beforeAll(async () => {
  brave = await startBraveFake({ apiKey: 'brave-key' });
  site = await startWebServer();
  w = await startWebApp({
    SVC_METERING_ENABLED: 'false',
    SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'brave-key', SVC_BRAVE_URL: brave.url, SVC_SEARCH_CACHE: 'memory',
    SVC_OUTBOUND_ALLOW_LOOPBACK: 'true', SVC_ROBOTS_CACHE_SECONDS: '60',
  });
});
afterAll(async () => {
  await w?.close();
  await brave?.close();
  await site?.close();
});
beforeEach(() => {
  site.route('/robots.txt', text('User-agent: *\nAllow: /\n'));
  site.route('/page', html('<!doctype html><html><head><title>Page</title></head><body><article><p>Plain words on a plain page, long enough to be the main text of it.</p></article></body></html>'));
});

const search = (token: string | undefined, q = 'unmetered query') => w.request('GET', `/v1/search?q=${encodeURIComponent(q)}`, { token });
const billingRows = async (agentId: string) => {
  const db = w.built.database.db;
  const [daily, slots, ledger] = await Promise.all([
    db.selectFrom('metering_daily').select('agent_id').where('agent_id', '=', agentId).execute(),
    db.selectFrom('metering_free_slots').select('agent_id').where('agent_id', '=', agentId).execute(),
    db.selectFrom('credit_ledger').select('kind').where('agent_id', '=', agentId).execute(),
  ]);
  return { daily: daily.length, slots: slots.length, ledger: ledger.map((r) => r.kind) };
};
const grant = (agentId: string, usd: number, expiresAt?: number) =>
  billingModuleFor(w.config)!.credits.add(agentId, { kind: 'grant', units: credits(usd * 100), ref: `grant:${agentId}:${usd}:${expiresAt}`, expiresAt });

describe('metering switched off', () => {
  test('searches past the free floor (50) with no credit are answered, free and uncounted; nothing is written to billing', async () => {
    const a = await w.agent();
    for (let i = 0; i < 52; i++) {
      const res = await search(a.token);
      expect(res.status).toBe(200);
      expect(res.body.usage).toMatchObject({ calls_total: 0, over_limit: false, search_quota_period: 'trial_credits', search_calls_limit: 50 });
      expect(res.body._svc.usage).toMatchObject({ credits_remaining_usd: '0.0000', tier_label: 'Free', browse_calls_remaining: 20 });
    }
    expect(await billingRows(a.id)).toEqual({ daily: 0, slots: 0, ledger: [] });
    expect((await search(undefined)).status).toBe(401);
  });

  test('browse past its free floor (20) and memory writes are free; the browse is still logged', async () => {
    const a = await w.agent();
    for (let i = 0; i < 21; i++) {
      const res = await w.request('POST', '/v1/browse', { token: a.token, body: { url: `${site.url}/page` } });
      expect(res.status).toBe(200);
      expect(res.body._svc.usage.browse_calls_remaining).toBe(20);
    }
    const put = await w.request('PUT', '/v1/memory/k', { token: a.token, body: { value: { n: 1 } } });
    expect(put.status).toBe(200);
    // Like search and browse, the write's answer carries billing's figures (it used to leave them out).
    expect(put.body._svc.usage).toMatchObject({ credits_remaining_usd: '0.0000', tier_label: 'Free', browse_calls_remaining: 20 });
    expect(await billingRows(a.id)).toEqual({ daily: 0, slots: 0, ledger: [] });
    const logged = await w.built.database.db.selectFrom('browse_log').select('browse_id').where('agent_id', '=', a.id).execute();
    expect(logged).toHaveLength(21);
  });

  test('_svc.usage shows a grant at once, and its expiry when the clock passes it', async () => {
    const a = await w.agent();
    expect((await search(a.token)).body._svc.usage).toMatchObject({ credits_remaining_usd: '0.0000', credits_expire_at: null });
    const expiresAt = w.clock.now() + 3_600_000;
    await grant(a.id, 5, expiresAt);
    expect((await search(a.token)).body._svc.usage).toMatchObject({ credits_remaining_usd: '5.0000', credits_expire_at: new Date(expiresAt).toISOString() });
    expect((await search(a.token)).body._svc.usage.credits_remaining_usd).toBe('5.0000');
    w.clock.advance(3_600_000);
    expect((await search(a.token)).body._svc.usage).toMatchObject({ credits_remaining_usd: '0.0000', credits_expire_at: null });
    // The grant is the only ledger row: the searches spent nothing.
    expect((await billingRows(a.id)).ledger).toEqual(['grant']);
  });

  test('a legacy monthly tier gets the monthly usage shape, and its quota is not enforced', async () => {
    const a = await w.agent('pro');
    const quota = tierOf('pro').searchPerMonth!;
    await setDailyCount(w, a.id, 'search', quota);
    for (let i = 0; i < 2; i++) {
      const res = await search(a.token);
      expect(res.status).toBe(200);
      expect(res.body.usage).toMatchObject({ search_quota_period: 'monthly', search_calls_limit: quota, calls_total: quota, calls_remaining: 0, over_limit: true });
      expect(res.body._svc.usage.tier_label).toBe(tierOf('pro').label);
    }
  });

  test('calls counted before metering was switched off leave the window and the month as the clock moves', async () => {
    const a = await w.agent();
    const now = w.clock.now();
    // An earlier metered life of this agent: one free browse an hour before it leaves the rolling
    // window, and seven searches today.
    await w.built.database.db.insertInto('metering_free_slots')
      .values({ agent_id: a.id, pool: 'browse', slot: 0, used_at: now - FLOOR_WINDOW_MS + 3_600_000, charge_id: 'earlier' }).execute();
    await setDailyCount(w, a.id, 'search', 7);
    let res = await search(a.token);
    expect(res.body.usage.calls_total).toBe(7);
    expect(res.body._svc.usage.browse_calls_remaining).toBe(19);
    w.clock.advance(3_600_000);
    res = await search(a.token);
    expect(res.body._svc.usage.browse_calls_remaining).toBe(20);
    expect(res.body.usage.calls_total).toBe(7);
    // A month later the month's count is this month's (none), not the copy's.
    w.clock.advanceDays(31);
    res = await search(a.token);
    expect(res.body.usage.calls_total).toBe(0);
    expect(await billingRows(a.id)).toMatchObject({ daily: 1, slots: 1 });
  });
});
