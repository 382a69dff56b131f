import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startWebApp, type WebApp } from './search-support';

/**
 * Feedback, feedback stats and the activity feed over real HTTP (a listening server, fetch), on the
 * engine of the project: cursor hardening, exact window and month edges, the cap under parallel
 * posts from an empty month, and feed pagination across kinds in one millisecond.
 */
let w: WebApp;
beforeAll(async () => {
  w = await startWebApp({}, { listen: true });
});
afterAll(async () => w?.close());

const DAY = 86_400_000;
const good = { ref_type: 'search_id', ref_id: 'r-1', signal: 'helpful' };

async function http(method: 'GET' | 'POST', path: string, token?: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(w.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: any = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: parsed };
}
const post = (token: string, body: unknown) => http('POST', '/v1/feedback', token, body);
const stats = (token: string) => http('GET', '/v1/feedback/stats', token);
const cursorOf = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** Every page of the feed at `limit`, as `kind:id`. */
async function walk(token: string, limit: number, qs = ''): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const res = await http('GET', `/v1/me/activity?limit=${limit}${qs}${cursor ? `&cursor=${cursor}` : ''}`, token);
    expect(res.status).toBe(200);
    seen.push(...res.body.items.map((i: any) => `${i.kind}:${i.id}`));
    cursor = res.body.next_cursor;
    expect(res.body.has_more).toBe(cursor !== null);
    if (!cursor) return seen;
  }
  throw new Error('feed did not end');
}

const browseRow = (agentId: string, at: number) => w.built.database.db.insertInto('browse_log').values({
  browse_id: randomUUID(), agent_id: agentId, url: 'https://example.org/', final_url: 'https://example.org/', mode: 'static',
  http_status: 200, content_type: 'text/html', title: 't', text: 'PAGE TEXT NEVER IN THE FEED', response_time_ms: 3, created_at: at,
}).execute();

describe('GET /v1/me/activity: cursors', () => {
  test('a cursor this feed never hands out is 400 INVALID_ACTIVITY_CURSOR, never a 500 (NUL, control characters, unknown kind)', async () => {
    const a = await w.agent();
    expect((await post(a.token, good)).status).toBe(201);
    const at = w.clock.now();
    const forged: unknown[] = [
      [at, 'feedback', 'a\u0000b'], // a NUL reached PostgreSQL as a bind value: 500
      [at, 'feedback', '\u0000'],
      [at, 'feedback', 'line\nbreak'],
      [at, 'feedback', '\ud800'], // lone surrogate
      [at, 'feedback', ''],
      [at, 'feedback', 'x'.repeat(129)],
      [at, 'search', 'x'], // not a kind of the feed
      [at, 'zzz', 'x'],
      [-1, 'feedback', 'x'],
      [at + 0.5, 'feedback', 'x'],
      [String(at), 'feedback', 'x'],
      { at, kind: 'feedback', id: 'x' },
    ];
    for (const c of forged) {
      const res = await http('GET', `/v1/me/activity?cursor=${cursorOf(c)}`, a.token);
      expect({ c, status: res.status, code: res.body.error_code }).toEqual({ c, status: 400, code: 'INVALID_ACTIVITY_CURSOR' });
    }
    // The cursors the feed hands out keep working.
    expect((await post(a.token, { ...good, ref_id: 'r-2' })).status).toBe(201);
    const first = await http('GET', '/v1/me/activity?limit=1', a.token);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await http('GET', `/v1/me/activity?limit=1&cursor=${first.body.next_cursor}`, a.token);
    expect(second.status).toBe(200);
    expect(second.body.items).toHaveLength(1);
    expect(second.body.items[0].id).not.toBe(first.body.items[0].id);
    // A well-formed cursor of any id at a valid kind is fine: the id is only a bound.
    expect((await http('GET', `/v1/me/activity?cursor=${cursorOf([at, 'browse', 'zzzz'])}`, a.token)).status).toBe(200);
  });

  test('another agent\'s cursor shows nothing of that agent', async () => {
    const a = await w.agent();
    const b = await w.agent();
    for (let i = 0; i < 3; i++) await post(b.token, { ...good, ref_id: `b-secret-${i}` });
    await post(a.token, { ...good, ref_id: 'a-own' });
    const bPage = await http('GET', '/v1/me/activity?limit=1', b.token);
    const res = await http('GET', `/v1/me/activity?cursor=${bPage.body.next_cursor}`, a.token);
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain('b-secret');
  });
});

describe('GET /v1/me/activity: pagination across kinds', () => {
  test('browses and feedback in one millisecond: every page size walks the same order, no duplicates or gaps; events added between pages do not disturb it', async () => {
    const a = await w.agent();
    const saved = w.clock.now();
    try {
      const T = saved;
      await browseRow(a.id, T - 1);
      for (let i = 0; i < 3; i++) await browseRow(a.id, T);
      for (let i = 0; i < 3; i++) expect((await post(a.token, { ...good, ref_id: `tie-${i}` })).status).toBe(201);
      await browseRow(a.id, T + 1);
      const all = (await http('GET', '/v1/me/activity?limit=100', a.token)).body.items;
      expect(all).toHaveLength(8);
      expect(JSON.stringify(all)).not.toContain('PAGE TEXT');
      const order = all.map((i: any) => `${i.kind}:${i.id}`);
      // occurred_at desc, then kind desc (feedback before browse), then id desc.
      const key = (i: any) => [Date.parse(i.occurred_at), i.kind, i.id] as const;
      for (let k = 1; k < all.length; k++) {
        const [t0, k0, i0] = key(all[k - 1]);
        const [t1, k1, i1] = key(all[k]);
        expect(t0 > t1 || (t0 === t1 && (k0 > k1 || (k0 === k1 && i0 > i1)))).toBe(true);
      }
      for (let limit = 1; limit <= 9; limit++) expect(await walk(a.token, limit)).toEqual(order);
      expect(await walk(a.token, 2, '&kinds=browse')).toEqual(order.filter((s: string) => s.startsWith('browse:')));

      // New events (same millisecond as the cursor and later) arrive between pages.
      const page1 = await http('GET', '/v1/me/activity?limit=3', a.token);
      await post(a.token, { ...good, ref_id: 'late-same-ms' });
      await browseRow(a.id, T);
      w.clock.advance(1);
      await post(a.token, { ...good, ref_id: 'late-newer' });
      const rest: string[] = [];
      let cursor: string | null = page1.body.next_cursor;
      while (cursor) {
        const res = await http('GET', `/v1/me/activity?limit=2&cursor=${cursor}`, a.token);
        expect(res.status).toBe(200);
        rest.push(...res.body.items.map((i: any) => `${i.kind}:${i.id}`));
        cursor = res.body.next_cursor;
      }
      const walked = [...page1.body.items.map((i: any) => `${i.kind}:${i.id}`), ...rest];
      expect(new Set(walked).size).toBe(walked.length); // no duplicates
      for (const s of order) expect(walked).toContain(s); // nothing that existed is skipped
      expect(walked.indexOf(order[0])).toBe(0);
    } finally {
      w.clock.set(saved);
    }
  });
});

describe('GET /v1/feedback/stats: exact window edges', () => {
  test('last_7d and last_30d are (now - N days, now]: an event exactly N days old has left the window', async () => {
    const a = await w.agent();
    const saved = w.clock.now();
    try {
      const now = Date.UTC(2026, 10, 25, 8, 30, 0, 250);
      const at = async (ms: number, ref_type: string, signal: string) => {
        w.clock.set(ms);
        expect((await post(a.token, { ref_type, ref_id: `e-${ms}`, signal })).status).toBe(201);
      };
      await at(now - 30 * DAY, 'blob_id', 'wrong'); // exactly 30 days old: out of both
      await at(now - 30 * DAY + 1, 'parse_id', 'unhelpful'); // in 30d only
      await at(now - 7 * DAY, 'memory_key', 'wrong'); // exactly 7 days old: 30d only
      await at(now - 7 * DAY + 1, 'memory_key', 'helpful'); // in both
      await at(now, 'browse_id', 'helpful'); // in both
      w.clock.set(now);
      const s = (await stats(a.token)).body;
      expect(s.last_7d).toEqual({ total: 2, helpful: 2, unhelpful: 0, wrong: 0 });
      expect(s.last_30d).toEqual({ total: 4, helpful: 2, unhelpful: 1, wrong: 1 });
      expect(s.by_ref_type).toEqual({
        search_id: { total: 0, helpful: 0, unhelpful: 0, wrong: 0 },
        memory_key: { total: 2, helpful: 1, unhelpful: 0, wrong: 1 },
        blob_id: { total: 0, helpful: 0, unhelpful: 0, wrong: 0 },
        parse_id: { total: 1, helpful: 0, unhelpful: 1, wrong: 0 },
        browse_id: { total: 1, helpful: 1, unhelpful: 0, wrong: 0 },
      });
      w.clock.set(now + 1); // one millisecond later the oldest of each window leaves it
      const later = (await stats(a.token)).body;
      expect(later.last_7d.total).toBe(1);
      expect(later.last_30d.total).toBe(3);
      expect(later.by_ref_type.parse_id.total).toBe(0);
    } finally {
      w.clock.set(saved);
    }
  });
});

describe('POST /v1/feedback: monthly cap', () => {
  test('the last millisecond of a UTC month still counts toward it; the first of the next starts a new count', async () => {
    const a = await w.agent();
    const saved = w.clock.now();
    try {
      await w.built.database.db.insertInto('feedback_monthly').values({ agent_id: a.id, month: '2026-11', count: 99 }).execute();
      w.clock.set(Date.UTC(2026, 10, 30, 23, 59, 59, 999));
      expect((await post(a.token, good)).status).toBe(201);
      const refused = await post(a.token, good);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ error_code: 'FEEDBACK_LIMIT', limit: 100, resets_at: '2026-12-01T00:00:00.000Z', upgrade_url: expect.any(String) });
      expect((await stats(a.token)).body).toMatchObject({ month: '2026-11', used_this_month: 100, remaining: 0 });
      w.clock.set(Date.UTC(2026, 11, 1));
      expect((await stats(a.token)).body).toMatchObject({ month: '2026-12', used_this_month: 0, remaining: 100, resets_at: '2027-01-01T00:00:00.000Z' });
      expect((await post(a.token, good)).status).toBe(201);
      // The refused post stored nothing: 100 November events and 1 December event.
      const rows = await w.built.database.db.selectFrom('feedback_events').select('created_at').where('agent_id', '=', a.id).execute();
      expect(rows).toHaveLength(2);
    } finally {
      w.clock.set(saved);
    }
  });

  test('parallel posts from an empty month: exactly the cap are stored, the rest are 429, none fail', async () => {
    const a = await w.agent();
    const results = await Promise.all(Array.from({ length: 108 }, (_, i) => post(a.token, { ...good, ref_id: `p-${i}` })));
    const byStatus: Record<number, number> = {};
    for (const r of results) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    expect(byStatus).toEqual({ 201: 100, 429: 8 });
    const stored = await w.built.database.db.selectFrom('feedback_events').select('feedback_id').where('agent_id', '=', a.id).execute();
    expect(stored).toHaveLength(100);
    expect((await stats(a.token)).body).toMatchObject({ used_this_month: 100, remaining: 0, limit: 100 });
  });
});

describe('POST /v1/feedback: field bounds at N and N+1', () => {
  test('ref_id of 256 characters passes, 257 is INVALID_REF_ID; note of 500 passes, 501 is NOTE_TOO_LONG; unknown fields are ignored', async () => {
    const a = await w.agent();
    expect((await post(a.token, { ...good, ref_id: 'r'.repeat(256) })).status).toBe(201);
    expect((await post(a.token, { ...good, ref_id: 'r'.repeat(257) })).body.error_code).toBe('INVALID_REF_ID');
    expect((await post(a.token, { ...good, note: '' })).status).toBe(201);
    expect((await post(a.token, { ...good, note: 'é'.repeat(500) })).status).toBe(201);
    const long = await post(a.token, { ...good, note: 'é'.repeat(501) });
    expect(long).toMatchObject({ status: 422, body: { error_code: 'NOTE_TOO_LONG' } });
    const extra = await post(a.token, { ...good, ref_id: 'with-extra', extra_field: { nested: true } });
    expect(extra.status).toBe(201);
    const refused: Array<[unknown, string]> = [
      [{ ...good, ref_type: ['search_id'] }, 'INVALID_REF_TYPE'],
      [{ ...good, ref_type: 'SEARCH_ID' }, 'INVALID_REF_TYPE'],
      [{ ...good, ref_id: ['x'] }, 'INVALID_REF_ID'],
      [{ ...good, ref_id: null }, 'INVALID_REF_ID'],
      [{ ...good, signal: null }, 'INVALID_SIGNAL'],
      [{ ...good, signal: 'Helpful' }, 'INVALID_SIGNAL'],
      [{}, 'INVALID_REF_TYPE'],
    ];
    for (const [body, code] of refused) {
      const res = await post(a.token, body);
      expect({ body, status: res.status, code: res.body.error_code }).toEqual({ body, status: 422, code });
    }
  });
});

describe('POST /v1/feedback: a note far past the body size limit', () => {
  test('is 422 NOTE_TOO_LONG like any note over 500 characters, not a 413 the spec does not have; nothing is stored', async () => {
    const a = await w.agent();
    const res = await post(a.token, { ...good, note: 'n'.repeat(w.config.core.bodyLimitBytes + 1) });
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('NOTE_TOO_LONG');
    expect(await w.built.database.db.selectFrom('feedback_events').select('feedback_id').where('agent_id', '=', a.id).execute()).toEqual([]);
    expect((await stats(a.token)).body.used_this_month).toBe(0);
  });
});
