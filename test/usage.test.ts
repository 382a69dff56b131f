import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startBraveFake, type FakeSearchProvider } from './fakes/search-providers';
import { setDailyCount, startWebApp, type WebApp } from './search-support';

/** GET /v1/usage (counters are billing's: real searches are charged, other pools seeded) and GET /v1/me/activity. */
let brave: FakeSearchProvider;
let w: WebApp;
beforeAll(async () => {
  brave = await startBraveFake({ apiKey: 'k' });
  w = await startWebApp({ SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'k', SVC_BRAVE_URL: brave.url });
});
afterAll(async () => {
  await w?.close();
  await brave?.close();
});

const DAY = 86_400_000;
const usage = (token?: string) => w.request('GET', '/v1/usage', { token });
const feedback = (token: string, ref_id: string) => w.request('POST', '/v1/feedback', { token, body: { ref_type: 'search_id', ref_id, signal: 'helpful' } });
const activity = (token: string | undefined, qs = '') => w.request('GET', `/v1/me/activity${qs}`, { token });

describe('GET /v1/usage', () => {
  test('calls this month and a 7-day daily breakdown, oldest first, zeros included', async () => {
    const a = await w.agent();
    const now = w.clock.now(); // 2026-11-21
    await setDailyCount(w, a.id, 'browse', 4, now - 6 * DAY); // 11-15: oldest day of the window
    await setDailyCount(w, a.id, 'memory_write', 9, now - 7 * DAY); // 11-14: this month, outside the 7 days
    await setDailyCount(w, a.id, 'parse', 2, now - 2 * DAY);
    await setDailyCount(w, a.id, 'search', 5, Date.UTC(2026, 9, 31)); // last month: not counted
    for (let i = 0; i < 3; i++) expect((await w.request('GET', `/v1/search?q=u${i}`, { token: a.token })).status).toBe(200);

    const res = await usage(a.token);
    expect(res.status).toBe(200);
    const b = res.body;
    expect(b).toMatchObject({ status: 'success', tier: 'free', metering: 'credits', month: '2026-11', calls_this_month: 18, calls_remaining: null, credits_remaining_usd: '0.0000' });
    expect(b.daily.map((d: any) => d.date)).toEqual(['2026-11-15', '2026-11-16', '2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21']);
    expect(b.daily[0]).toEqual({ date: '2026-11-15', calls: 4, search: 0, browse: 4, memory_write: 0, parse: 0 });
    expect(b.daily[4]).toEqual({ date: '2026-11-19', calls: 2, search: 0, browse: 0, memory_write: 0, parse: 2 });
    expect(b.daily[6]).toEqual({ date: '2026-11-21', calls: 3, search: 3, browse: 0, memory_write: 0, parse: 0 });
    expect(b.daily[1].calls).toBe(0);
    expect(b.pools.search).toEqual({ calls_this_month: 3, monthly_limit: null, remaining_this_month: null, free_floor_30d: 50, free_remaining_30d: 47 });
    expect(b.pools.parse).toMatchObject({ calls_this_month: 2, monthly_limit: 100, remaining_this_month: 98, free_floor_30d: null });
    // The free tier's write cap (1,000 per UTC month, MEMORY_OPS_LIMIT) is shown beside its rolling floor.
    expect(b.pools.memory_write).toMatchObject({ calls_this_month: 9, monthly_limit: 1000, remaining_this_month: 991, free_floor_30d: 1000 });
  });

  test('the breakdown crosses a month boundary; calls_this_month does not', async () => {
    const a = await w.agent();
    const saved = w.clock.now();
    try {
      w.clock.set(Date.UTC(2026, 11, 2, 9)); // 2 December
      await setDailyCount(w, a.id, 'browse', 3, Date.UTC(2026, 10, 29)); // 29 November
      await setDailyCount(w, a.id, 'browse', 1, Date.UTC(2026, 11, 1));
      const b = (await usage(a.token)).body;
      expect(b.month).toBe('2026-12');
      expect(b.calls_this_month).toBe(1);
      expect(b.daily.map((d: any) => d.browse)).toEqual([0, 0, 0, 3, 0, 1, 0]);
      expect(b.daily[6].date).toBe('2026-12-02');
    } finally {
      w.clock.set(saved);
    }
  });

  test('legacy monthly tier: calls_remaining sums what is left of each finite quota', async () => {
    const a = await w.agent('starter');
    await setDailyCount(w, a.id, 'search', 1000);
    await setDailyCount(w, a.id, 'browse', 50);
    const b = (await usage(a.token)).body;
    expect(b).toMatchObject({ tier: 'starter', metering: 'monthly', calls_this_month: 1050 });
    // search 2000 + browse 150 + memory writes 5000 + parse 1000
    expect(b.calls_remaining).toBe(2000 + 150 + 5000 + 1000);
    expect(b.pools.search).toMatchObject({ monthly_limit: 3000, remaining_this_month: 2000, free_floor_30d: null, free_remaining_30d: null });
  });

  test('401 without a key or with a wrong key; an agent sees only its own counters', async () => {
    expect((await usage()).body.error_code).toBe('INVALID_API_KEY');
    expect((await usage('svc_nope')).status).toBe(401);
    const a = await w.agent();
    const b = await w.agent();
    await setDailyCount(w, a.id, 'browse', 7);
    expect((await usage(b.token)).body.calls_this_month).toBe(0);
  });
});

describe('GET /v1/me/activity', () => {
  test('the caller\'s feedback newest first, paginated with a cursor, never searches or other agents\' events', async () => {
    const a = await w.agent();
    const other = await w.agent();
    const saved = w.clock.now();
    try {
      // Three events in the same millisecond and two later: the cursor must split ties exactly.
      for (const id of ['f1', 'f2', 'f3']) await feedback(a.token, id);
      w.clock.advanceSeconds(1);
      await feedback(a.token, 'f4');
      w.clock.advanceSeconds(1);
      await feedback(a.token, 'f5');
      await feedback(other.token, 'not-mine');
      await w.request('GET', '/v1/search?q=not-in-feed', { token: a.token });

      const seen: any[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await activity(a.token, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.status).toBe(200);
        seen.push(...res.body.items);
        cursor = res.body.next_cursor;
        expect(res.body.has_more).toBe(cursor !== null);
        pages++;
      } while (cursor && pages < 10);
      expect(pages).toBe(3);
      expect(seen).toHaveLength(5);
      expect(seen.map((i) => i.feedback.ref_id).slice(0, 2)).toEqual(['f5', 'f4']);
      expect(new Set(seen.map((i) => i.feedback.ref_id))).toEqual(new Set(['f1', 'f2', 'f3', 'f4', 'f5']));
      expect(seen[0]).toMatchObject({ kind: 'feedback', id: seen[0].feedback.feedback_id, occurred_at: new Date(w.clock.now()).toISOString() });
      expect(seen[0].feedback).toMatchObject({ ref_type: 'search_id', signal: 'helpful', note: null });
      const times = seen.map((i) => Date.parse(i.occurred_at));
      expect([...times].sort((x, y) => y - x)).toEqual(times);
      expect(JSON.stringify(seen)).not.toContain('not-in-feed');
      expect(JSON.stringify(seen)).not.toContain('not-mine');
    } finally {
      w.clock.set(saved);
    }
  });

  test('kinds filter, empty feed, default page size', async () => {
    const a = await w.agent();
    expect((await activity(a.token)).body).toEqual({ status: 'success', items: [], has_more: false, next_cursor: null });
    await feedback(a.token, 'x');
    expect((await activity(a.token, '?kinds=browse')).body.items).toEqual([]);
    expect((await activity(a.token, '?kinds=approval,feedback')).body.items).toHaveLength(1);
  });

  test('400 INVALID_ACTIVITY_CURSOR for a forged cursor; 422 for bad limit or kinds; 401 without a key', async () => {
    const a = await w.agent();
    expect((await activity(a.token, '?cursor=bm90LWEtY3Vyc29y')).body.error_code).toBe('INVALID_ACTIVITY_CURSOR');
    expect((await activity(a.token, '?cursor=%5B%5D')).status).toBe(400);
    expect((await activity(a.token, '?limit=0')).status).toBe(422);
    expect((await activity(a.token, '?limit=101')).status).toBe(422);
    expect((await activity(a.token, '?kinds=search')).body.error_code).toBe('INVALID_ACTIVITY_KIND');
    expect((await activity(undefined)).body.error_code).toBe('INVALID_API_KEY');
    expect((await activity('svc_wrong')).status).toBe(401);
  });
});
