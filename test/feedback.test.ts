import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startWebApp, type WebApp } from './search-support';

/** POST /v1/feedback and GET /v1/feedback/stats; the monthly cap runs on the injected clock. */
let w: WebApp;
beforeAll(async () => {
  w = await startWebApp(); // no search provider configured: also covers search's 503
});
afterAll(async () => w?.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const post = (token: string | undefined, body: unknown) => w.request('POST', '/v1/feedback', { token, body });
const good = { ref_type: 'search_id', ref_id: '9b2f7c1e-0000-4000-8000-000000000001', signal: 'helpful' };
const setMonthCount = (agentId: string, count: number) => {
  const month = new Date(w.clock.now()).toISOString().slice(0, 7);
  return w.built.database.db.insertInto('feedback_monthly').values({ agent_id: agentId, month, count })
    .onConflict((oc) => oc.columns(['agent_id', 'month']).doUpdateSet({ count })).execute();
};

describe('POST /v1/feedback', () => {
  test('201 with feedback_id and _svc; ref_id is opaque (not looked up)', async () => {
    const a = await w.agent();
    const res = await post(a.token, { ...good, note: 'first result was exactly it' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'success', feedback_id: expect.stringMatching(UUID) });
    for (const f of ['served_by', 'register_url', 'feedback_url', 'browse_url', 'terms_version', 'community']) expect(res.body._svc).toHaveProperty(f);
    for (const ref_type of ['memory_key', 'blob_id', 'parse_id', 'browse_id']) {
      for (const signal of ['unhelpful', 'wrong']) {
        expect((await post(a.token, { ref_type, ref_id: `anything at all ${ref_type}`, signal, note: null })).status).toBe(201);
      }
    }
    const row = await w.built.database.db.selectFrom('feedback_events').selectAll().where('feedback_id', '=', res.body.feedback_id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ agent_id: a.id, ref_type: 'search_id', signal: 'helpful', note: 'first result was exactly it' });
  });

  test.each([
    [{ ...good, ref_type: undefined }, 'INVALID_REF_TYPE'],
    [{ ...good, ref_type: 'url' }, 'INVALID_REF_TYPE'],
    [{ ...good, ref_type: 7 }, 'INVALID_REF_TYPE'],
    [{ ...good, ref_id: undefined }, 'INVALID_REF_ID'],
    [{ ...good, ref_id: '' }, 'INVALID_REF_ID'],
    [{ ...good, ref_id: '   ' }, 'INVALID_REF_ID'],
    [{ ...good, ref_id: '\u0085\u3000\t' }, 'INVALID_REF_ID'], // whitespace String.prototype.trim does not know (NEL)
    [{ ...good, ref_id: 12 }, 'INVALID_REF_ID'],
    [{ ...good, ref_id: 'x'.repeat(257) }, 'INVALID_REF_ID'],
    [{ ...good, signal: undefined }, 'INVALID_SIGNAL'],
    [{ ...good, signal: 'meh' }, 'INVALID_SIGNAL'],
    [{ ...good, note: 'n'.repeat(501) }, 'NOTE_TOO_LONG'],
    [{ ...good, note: '😀'.repeat(501) }, 'NOTE_TOO_LONG'],
    [{ ...good, note: 5 }, 'VALIDATION_FAILED'],
  ])('422 %# → %s', async (body, code) => {
    const a = await w.agent();
    const res = await post(a.token, body);
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe(code);
    expect(await w.built.database.db.selectFrom('feedback_events').select('feedback_id').where('agent_id', '=', a.id).execute()).toEqual([]);
  });

  test('a note of exactly 500 characters (code points, emoji included) is accepted', async () => {
    const a = await w.agent();
    expect((await post(a.token, { ...good, note: 'n'.repeat(500) })).status).toBe(201);
    expect((await post(a.token, { ...good, note: '😀'.repeat(500) })).status).toBe(201);
  });

  test('400 for a body that is not JSON; 422 for a non-object', async () => {
    const a = await w.agent();
    expect((await post(a.token, '{nope')).status).toBe(400);
    expect((await post(a.token, '[1]')).status).toBe(422);
  });

  test('no key or a wrong key: 401 INVALID_API_KEY, nothing stored', async () => {
    expect((await post(undefined, good)).body.error_code).toBe('INVALID_API_KEY');
    expect((await post('svc_wrong', good)).body.error_code).toBe('INVALID_API_KEY');
    expect((await w.request('GET', '/v1/feedback/stats')).status).toBe(401);
  });

  test('append-only: no route changes or removes an event', async () => {
    const a = await w.agent();
    const id = (await post(a.token, good)).body.feedback_id;
    expect((await w.request('DELETE', `/v1/feedback/${id}`, { token: a.token })).status).toBe(404);
    expect((await w.request('PUT', `/v1/feedback/${id}`, { token: a.token, body: good })).status).toBe(404);
  });
});

describe('monthly cap (UTC month, per tier)', () => {
  test('free: the 100th event of the month passes, the 101st is 429 FEEDBACK_LIMIT; the next UTC month starts again', async () => {
    const a = await w.agent();
    await setMonthCount(a.id, 99);
    expect((await post(a.token, good)).status).toBe(201);
    const refused = await post(a.token, good);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error_code: 'FEEDBACK_LIMIT', upgrade_url: expect.any(String), limit: 100, resets_at: '2026-12-01T00:00:00.000Z' });
    const stats = await w.request('GET', '/v1/feedback/stats', { token: a.token });
    expect(stats.body).toMatchObject({ limit: 100, remaining: 0, used_this_month: 100 });
    const saved = w.clock.now();
    w.clock.set(Date.UTC(2026, 11, 1, 0, 0, 0)); // first millisecond of December (UTC)
    try {
      expect((await post(a.token, good)).status).toBe(201);
      expect((await w.request('GET', '/v1/feedback/stats', { token: a.token })).body).toMatchObject({ month: '2026-12', remaining: 99 });
    } finally {
      w.clock.set(saved);
    }
  });

  test('the cap follows the tier table (starter 1,000)', async () => {
    const a = await w.agent('starter');
    await setMonthCount(a.id, 999);
    expect((await post(a.token, good)).status).toBe(201);
    expect((await post(a.token, good)).body.error_code).toBe('FEEDBACK_LIMIT');
  });

  test('concurrent posts never pass the cap', async () => {
    const a = await w.agent();
    await setMonthCount(a.id, 95);
    const results = await Promise.all(Array.from({ length: 12 }, () => post(a.token, good)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    expect(results.filter((r) => r.status === 429)).toHaveLength(7);
  });
});

describe('GET /v1/feedback/stats', () => {
  test('rolling 7 and 30 day counts, by ref_type and signal, only the caller\'s events', async () => {
    const a = await w.agent();
    const other = await w.agent();
    const saved = w.clock.now();
    try {
      await post(a.token, { ...good, signal: 'wrong' }); // will be 20 days old
      w.clock.advanceDays(12);
      await post(a.token, { ref_type: 'browse_id', ref_id: 'b1', signal: 'helpful' }); // 8 days old
      w.clock.advanceDays(5);
      await post(a.token, { ref_type: 'browse_id', ref_id: 'b2', signal: 'unhelpful' }); // 3 days old
      await post(other.token, good);
      w.clock.advanceDays(3);
      const s = (await w.request('GET', '/v1/feedback/stats', { token: a.token })).body;
      expect(s.status).toBe('success');
      expect(s.last_7d).toEqual({ total: 1, helpful: 0, unhelpful: 1, wrong: 0 });
      expect(s.last_30d).toEqual({ total: 3, helpful: 1, unhelpful: 1, wrong: 1 });
      expect(s.by_ref_type.browse_id).toEqual({ total: 2, helpful: 1, unhelpful: 1, wrong: 0 });
      expect(s.by_ref_type.search_id).toEqual({ total: 1, helpful: 0, unhelpful: 0, wrong: 1 });
      expect(s.by_ref_type.memory_key.total).toBe(0);
      w.clock.advanceDays(11); // the oldest is now 31 days old
      const later = (await w.request('GET', '/v1/feedback/stats', { token: a.token })).body;
      expect(later.last_30d.total).toBe(2);
      expect(later.by_ref_type.search_id.total).toBe(0);
    } finally {
      w.clock.set(saved);
    }
  });
});

describe('search on a host without a provider', () => {
  test('503 SEARCH_PROVIDER_UNCONFIGURED, never a 500, and nothing is charged', async () => {
    const a = await w.agent();
    const res = await w.request('GET', '/v1/search?q=x', { token: a.token });
    expect(res.status).toBe(503);
    expect(res.body.error_code).toBe('SEARCH_PROVIDER_UNCONFIGURED');
    expect((await w.request('GET', '/v1/usage', { token: a.token })).body.calls_this_month).toBe(0);
  });
});

describe('cap follows purchases', () => {
  test('an agent that bought credit (spark by lifetime purchases) gets spark\'s cap while stored as free', async () => {
    const a = await w.agent();
    await w.built.database.db.insertInto('billing_accounts').values({
      agent_id: a.id, lifetime_purchase_units: 10_000, payment_customer_id: null, payment_method_id: null, recharge_consent_id: null,
      auto_topup_enabled: 0, auto_topup_threshold_units: 0, auto_topup_units: 0, topup_dip_open: 0, topup_intent_id: null,
      created_at: w.clock.now(), updated_at: w.clock.now(),
    }).execute();
    await setMonthCount(a.id, 100);
    expect((await post(a.token, good)).status).toBe(201);
    expect((await w.request('GET', '/v1/feedback/stats', { token: a.token })).body).toMatchObject({ limit: 1000, remaining: 899 });
  });
});
