import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startWebApp, type WebApp } from './search-support';

/**
 * POST and GET /v1/me/approval-events, on both engines: append-only human-approval events, declared
 * by the agent, capped per UTC month by tier (on the injected clock), listed newest first, and shown
 * in the activity feed as kind `approval`.
 */
let w: WebApp;
beforeAll(async () => {
  w = await startWebApp();
});
afterAll(async () => w?.close());

const PATH = '/v1/me/approval-events';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const post = (token: string | undefined, body: unknown) => w.request('POST', PATH, { token, body });
const list = (token: string | undefined, query = '') => w.request('GET', `${PATH}${query}`, { token });
const good = { action: 'send_email to finance@example.com', decision: 'approved' };
const rowsOf = (agentId: string) => w.built.database.db.selectFrom('approval_events').selectAll().where('agent_id', '=', agentId).execute();
const setMonthCount = (agentId: string, count: number) => {
  const month = new Date(w.clock.now()).toISOString().slice(0, 7);
  return w.built.database.db.insertInto('approval_monthly').values({ agent_id: agentId, month, count })
    .onConflict((oc) => oc.columns(['agent_id', 'month']).doUpdateSet({ count })).execute();
};

describe('POST /v1/me/approval-events', () => {
  test('201 with the event and _svc; every field stored as given; decided_at defaults to now', async () => {
    const a = await w.agent();
    const full = {
      action: 'pay invoice 42', decision: 'denied', approver: 'ops lead (Dana)', tool: 'payments.transfer', risk_class: 'high',
      note: 'amount above the agreed budget', decided_at: '2026-01-15T09:30:00+01:00',
    };
    const res = await post(a.token, full);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: 'success', approval_id: expect.stringMatching(UUID), ...full, decided_at: '2026-01-15T08:30:00.000Z',
      created_at: new Date(w.clock.now()).toISOString(),
    });
    for (const f of ['served_by', 'register_url', 'terms_version']) expect(res.body._svc).toHaveProperty(f);
    const [row] = await rowsOf(a.id);
    expect(row).toMatchObject({ approval_id: res.body.approval_id, action: 'pay invoice 42', decision: 'denied', risk_class: 'high', tool: 'payments.transfer' });
    expect(Number(row.decided_at)).toBe(Date.UTC(2026, 0, 15, 8, 30));

    const bare = await post(a.token, { ...good, approver: null, tool: null, risk_class: null, note: '', decided_at: null });
    expect(bare.status).toBe(201);
    expect(bare.body).toMatchObject({ approver: null, tool: null, risk_class: null, note: null, decided_at: new Date(w.clock.now()).toISOString() });
  });

  test.each([
    [{ ...good, action: undefined }, 'INVALID_APPROVAL_ACTION'],
    [{ ...good, action: '' }, 'INVALID_APPROVAL_ACTION'],
    [{ ...good, action: '  \t ' }, 'INVALID_APPROVAL_ACTION'],
    [{ ...good, action: '\u0085' }, 'INVALID_APPROVAL_ACTION'], // NEL: String.trim keeps it
    [{ ...good, action: 42 }, 'INVALID_APPROVAL_ACTION'],
    [{ ...good, action: 'a'.repeat(201) }, 'INVALID_APPROVAL_ACTION'],
    [{ ...good, decision: undefined }, 'INVALID_APPROVAL_DECISION'],
    [{ ...good, decision: 'maybe' }, 'INVALID_APPROVAL_DECISION'],
    [{ ...good, decision: true }, 'INVALID_APPROVAL_DECISION'],
    [{ ...good, note: 'n'.repeat(501) }, 'NOTE_TOO_LONG'],
    [{ ...good, note: '😀'.repeat(501) }, 'NOTE_TOO_LONG'],
    [{ ...good, decided_at: 'yesterday' }, 'INVALID_DECIDED_AT'],
    [{ ...good, decided_at: '2026-11-26' }, 'INVALID_DECIDED_AT'], // a date alone
    [{ ...good, decided_at: '2026-11-26T09:30:00' }, 'INVALID_DECIDED_AT'], // no time zone
    [{ ...good, decided_at: '2026-02-30T09:30:00Z' }, 'INVALID_DECIDED_AT'], // no such day
    [{ ...good, decided_at: '2026-11-26T25:30:00Z' }, 'INVALID_DECIDED_AT'],
    [{ ...good, decided_at: '2099-01-01T00:00:00Z' }, 'INVALID_DECIDED_AT'], // in the future
    [{ ...good, decided_at: 1764149400000 }, 'INVALID_DECIDED_AT'],
    [{ ...good, decided_at: 'x'.repeat(41) }, 'INVALID_DECIDED_AT'],
    [{ ...good, approver: 'p'.repeat(201) }, 'VALIDATION_FAILED'],
    [{ ...good, approver: '' }, 'VALIDATION_FAILED'],
    [{ ...good, tool: 't'.repeat(129) }, 'VALIDATION_FAILED'],
    [{ ...good, risk_class: 'medium' }, 'VALIDATION_FAILED'],
    [{ ...good, note: 5 }, 'VALIDATION_FAILED'],
  ])('422 %# → %s, nothing stored', async (body, code) => {
    const a = await w.agent();
    const res = await post(a.token, body);
    expect([res.status, res.body.error_code]).toEqual([422, code]);
    expect(res.body.message).toEqual(expect.any(String));
    expect(await rowsOf(a.id)).toEqual([]);
  });

  test('limits are exact: action 200, approver 200, tool 128, note 500 characters (code points); decided_at up to 5 minutes ahead (clock skew)', async () => {
    const a = await w.agent();
    const res = await post(a.token, {
      ...good, action: '✓'.repeat(200), approver: 'p'.repeat(200), tool: 't'.repeat(128), note: '😀'.repeat(500),
      decided_at: new Date(w.clock.now() + 5 * 60_000).toISOString(),
    });
    expect(res.status).toBe(201);
    const late = await post(a.token, { ...good, decided_at: new Date(w.clock.now() + 5 * 60_000 + 1000).toISOString() });
    expect(late.body.error_code).toBe('INVALID_DECIDED_AT');
  });

  test('a body over the size limit is 422 NOTE_TOO_LONG, not 413 or 500', async () => {
    const a = await w.agent();
    const res = await post(a.token, { ...good, note: 'n'.repeat(2 * 1024 * 1024) });
    expect([res.status, res.body.error_code]).toEqual([422, 'NOTE_TOO_LONG']);
  });

  test('400 for a body that is not JSON; 422 for a non-object', async () => {
    const a = await w.agent();
    expect((await post(a.token, '{nope')).status).toBe(400);
    expect((await post(a.token, '[1]')).status).toBe(422);
  });

  test('no key or a wrong key: 401 INVALID_API_KEY, nothing stored', async () => {
    for (const token of [undefined, 'svc_wrong']) {
      expect((await post(token, good)).body.error_code).toBe('INVALID_API_KEY');
      expect((await list(token)).body.error_code).toBe('INVALID_API_KEY');
    }
    expect(await w.built.database.db.selectFrom('approval_events').select('approval_id').where('action', '=', good.action).where('agent_id', '=', 'nobody').execute()).toEqual([]);
  });

  test('append-only: no route changes or removes an event', async () => {
    const a = await w.agent();
    const id = (await post(a.token, good)).body.approval_id;
    expect((await w.request('DELETE', `${PATH}/${id}`, { token: a.token })).status).toBe(404);
    expect((await w.request('PUT', `${PATH}/${id}`, { token: a.token, body: good })).status).toBe(404);
    expect((await w.request('DELETE', PATH, { token: a.token })).status).toBe(404);
    expect(await rowsOf(a.id)).toHaveLength(1);
  });
});

describe('monthly cap (UTC month, per tier)', () => {
  test('free: the 1,000th event of the month passes, the 1,001st is 429 APPROVAL_EVENTS_LIMIT with upgrade_url; the next UTC month starts again', async () => {
    const a = await w.agent();
    await setMonthCount(a.id, 999);
    expect((await post(a.token, good)).status).toBe(201);
    const refused = await post(a.token, good);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error_code: 'APPROVAL_EVENTS_LIMIT', upgrade_url: expect.any(String), limit: 1000, resets_at: '2026-12-01T00:00:00.000Z' });
    expect(await rowsOf(a.id)).toHaveLength(1);
    expect((await list(a.token)).body).toMatchObject({ limit: 1000, used_this_month: 1000, remaining: 0 });
    const saved = w.clock.now();
    w.clock.set(Date.UTC(2026, 11, 1)); // first millisecond of December (UTC)
    try {
      expect((await post(a.token, good)).status).toBe(201);
      expect((await list(a.token)).body).toMatchObject({ month: '2026-12', used_this_month: 1, remaining: 999 });
    } finally {
      w.clock.set(saved);
    }
  });

  test('the cap follows the tier table (starter 10,000)', async () => {
    const a = await w.agent('starter');
    await setMonthCount(a.id, 9999);
    expect((await post(a.token, good)).status).toBe(201);
    expect((await post(a.token, good)).body.error_code).toBe('APPROVAL_EVENTS_LIMIT');
  });

  test('concurrent posts never pass the cap', async () => {
    const a = await w.agent();
    await setMonthCount(a.id, 995);
    const results = await Promise.all(Array.from({ length: 12 }, () => post(a.token, good)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    expect(results.filter((r) => r.status === 429)).toHaveLength(7);
    expect(await rowsOf(a.id)).toHaveLength(5);
  });
});

describe('GET /v1/me/approval-events', () => {
  test('newest first, paginated without repeats or gaps (events sharing a millisecond included), only the caller\'s, filtered by decision', async () => {
    const a = await w.agent();
    const other = await w.agent();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push((await post(a.token, { action: `step ${i}`, decision: i % 3 === 0 ? 'denied' : 'approved' })).body.approval_id);
      if (i % 2 === 1) w.clock.advance(1); // pairs share a millisecond
    }
    await post(other.token, { action: 'not yours', decision: 'approved' });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list(a.token, `?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.events.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.events.map((e: any) => e.action));
      cursor = res.body.next_cursor;
      expect(res.body.has_more).toBe(cursor !== null);
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual(Array.from({ length: 7 }, (_, i) => `step ${i}`));
    const all = (await list(a.token, '?limit=100')).body.events;
    const times = all.map((e: any) => e.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(all[0].action).toBe('step 6');
    const denied = (await list(a.token, '?decision=denied')).body.events.map((e: any) => e.action);
    expect(denied.sort()).toEqual(['step 0', 'step 3', 'step 6']);
    expect(ids).toHaveLength(7);
  });

  test('an empty list for a new agent; bad queries are refused with their codes', async () => {
    const a = await w.agent();
    expect((await list(a.token)).body).toMatchObject({ status: 'success', events: [], has_more: false, next_cursor: null, remaining: 1000 });
    for (const q of ['?limit=0', '?limit=101', '?limit=x', '?decision=maybe']) {
      expect([(await list(a.token, q)).status, q]).toEqual([422, q]);
    }
    const feedCursor = Buffer.from(JSON.stringify([1, 'browse', 'x'])).toString('base64url'); // the feed's, not this list's
    for (const cursor of ['nope', feedCursor, Buffer.from(JSON.stringify([1, 'approval', 'a\u0000b'])).toString('base64url')]) {
      const res = await list(a.token, `?cursor=${cursor}`);
      expect([res.status, res.body.error_code]).toEqual([400, 'INVALID_APPROVAL_CURSOR']);
    }
  });
});

describe('the activity feed', () => {
  test('approval events appear as kind approval, merged with feedback by time; kinds=approval filters; nothing of other agents', async () => {
    const a = await w.agent();
    const other = await w.agent();
    await w.request('POST', '/v1/feedback', { token: a.token, body: { ref_type: 'search_id', ref_id: 's1', signal: 'helpful' } });
    w.clock.advance(10);
    const approval = (await post(a.token, { ...good, tool: 'mail.send', risk_class: 'high' })).body;
    await post(other.token, { action: 'theirs', decision: 'denied' });
    const feed = (await w.request('GET', '/v1/me/activity', { token: a.token })).body;
    expect(feed.items.map((i: any) => i.kind)).toEqual(['approval', 'feedback']);
    expect(feed.items[0]).toMatchObject({
      kind: 'approval', id: approval.approval_id, occurred_at: approval.created_at,
      approval: { approval_id: approval.approval_id, action: good.action, decision: 'approved', tool: 'mail.send', risk_class: 'high', decided_at: approval.decided_at },
    });
    const only = (await w.request('GET', '/v1/me/activity?kinds=approval', { token: a.token })).body;
    expect(only.items.map((i: any) => i.id)).toEqual([approval.approval_id]);
  });
});
