import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

/**
 * The admin trust routes over HTTP on a real database: the parity check (the whole trust log
 * replayed into fresh projections and diffed with the stored rows) after a scripted history, then
 * with rows altered behind the service's back; its latest result; the decision trace of an agent;
 * the adoption counts. One app for the file: the history below is the only one it holds, so every
 * count is exact.
 */

const DAY = 86_400_000;
const ADMIN = { 'x-admin-key': 'test-admin-key' };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const admin = (path: string, headers: Record<string, string> = ADMIN) => t.request('GET', path, { headers });
const parity = async () => {
  const res = await admin('/admin/trust/parity-check');
  expect(res.status).toBe(200);
  return res.body;
};
const rate = async (rater: RegisteredAgent, subject: RegisteredAgent, outcome: string, category = 'task_completion') => {
  const res = await t.request('POST', '/v1/feedback/interaction', {
    token: rater.apiKey,
    body: { subject_agent_id: subject.agentId, ref_type: 'task', ref_id: `${rater.agentId}-${outcome}-${t.clock.now()}`, outcome, category },
  });
  expect(res.status).toBe(201);
  return res.body as { event_id: string; log_index: number; created_at: string };
};
const dispute = async (subject: RegisteredAgent, eventId: string) => {
  const res = await t.request('POST', '/v1/reputation/dispute', { token: subject.apiKey, body: { event_id: eventId, reason: 'not what happened' } });
  expect(res.status).toBe(201);
  return res.body as { dispute_id: string; log_index: number };
};
const decide = async (disputeId: string, decision: 'upheld' | 'dismissed') => {
  const res = await t.request('POST', `/admin/disputes/${disputeId}/decision`, { headers: ADMIN, body: { decision } });
  expect(res.status).toBe(200);
  return res.body as { log_index: number };
};
const treeSize = async () => (await t.request('GET', '/v1/trust/log/entries?start=0')).body.tree_size as number;

const ADMIN_ROUTES = ['/admin/trust/parity-check', '/admin/trust/parity-check/latest', '/admin/trust/adoption', '/admin/trust/decision-trace/00000000-0000-4000-8000-000000000000'];

describe('admin trust routes', () => {
  test('every admin trust route: 401 INVALID_ADMIN_KEY without the key, with a wrong one, or with an agent key', async () => {
    const a = await t.registerAgent();
    for (const path of ADMIN_ROUTES) {
      for (const headers of [{}, { 'x-admin-key': 'wrong' }, { authorization: `Bearer ${a.apiKey}` }] as Record<string, string>[]) {
        const res = await admin(path, headers);
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.body.error_code).toBe('INVALID_ADMIN_KEY');
      }
    }
    // None of these ran a check.
    expect(await t.database.db.selectFrom('trust_parity_checks').select('check_id').execute()).toEqual([]);
  });

  test('/admin/trust/parity-check/latest before any run: 404 PARITY_CHECK_NOT_RUN', async () => {
    const res = await admin('/admin/trust/parity-check/latest');
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('PARITY_CHECK_NOT_RUN');
  });

  describe('after a scripted history', () => {
    let s1: RegisteredAgent;
    let s2: RegisteredAgent;
    const ev: Record<string, { event_id: string; log_index: number; created_at: string }> = {};
    const decisions: Record<string, { log_index: number }> = {};
    let day0: number;

    beforeAll(async () => {
      s1 = await t.registerAgent();
      s2 = await t.registerAgent();
      const [r1, r2, r3, r4] = [await t.registerAgent(), await t.registerAgent(), await t.registerAgent(), await t.registerAgent()];
      day0 = t.clock.now();
      // Day 0: three ratings.
      ev.a = await rate(r1, s1, 'approved');
      ev.b = await rate(r2, s1, 'error', 'accuracy');
      ev.c = await rate(r1, s2, 'approved');
      // Day 10: two more.
      t.clock.advanceDays(10);
      ev.d = await rate(r3, s1, 'rejected');
      ev.e = await rate(r2, s2, 'approved', 'responsiveness');
      // Day 35: one more, then disputes: upheld, dismissed, left open.
      t.clock.advanceDays(25);
      ev.f = await rate(r4, s1, 'approved', 'accuracy');
      decisions.upheld = await decide((await dispute(s1, ev.b.event_id)).dispute_id, 'upheld');
      decisions.dismissed = await decide((await dispute(s1, ev.d.event_id)).dispute_id, 'dismissed');
      await dispute(s2, ev.c.event_id);
      // Day 40.
      t.clock.advanceDays(5);
    });

    test('the parity check answers ok with no mismatch; /latest returns it', async () => {
      const agentCount = (await t.database.db.selectFrom('agents').select('agent_id').execute()).length;
      const size = await treeSize();
      const r = await parity();
      expect(r).toMatchObject({
        status: 'success', ok: true, mismatch_count: 0, mismatches: [], tree_size: size, entries_replayed: size,
        // Every agent has its epoch.opened entry; the reputation projection adds no agent of its own.
        agents_checked: agentCount, checked_at: new Date(t.clock.now()).toISOString(),
      });
      expect(agentCount).toBe(7);
      // 7 epoch.opened + 6 interactions + 3 disputes filed + 2 decided.
      expect(size).toBe(18);
      const latest = await admin('/admin/trust/parity-check/latest');
      expect(latest.status).toBe(200);
      expect(latest.body).toEqual(r);
    });

    /** Runs the check with `alter` applied, expects `expected` among the mismatches (and `count` of them), then undoes it and checks again. */
    async function tampered(alter: () => Promise<unknown>, undo: () => Promise<unknown>, expected: Record<string, unknown>[], count?: number) {
      await alter();
      try {
        const r = await parity();
        expect(r.ok).toBe(false);
        expect(r.mismatches).toEqual(expect.arrayContaining(expected.map((m) => expect.objectContaining(m))));
        if (count !== undefined) expect(r.mismatch_count).toBe(count);
        expect(r.mismatch_count).toBe(r.mismatches.length);
        const latest = await admin('/admin/trust/parity-check/latest');
        expect(latest.body.check_id).toBe(r.check_id);
        expect(latest.body.ok).toBe(false);
      } finally {
        await undo();
      }
      const clean = await parity();
      expect(clean).toMatchObject({ ok: true, mismatch_count: 0 });
      expect((await admin('/admin/trust/parity-check/latest')).body.check_id).toBe(clean.check_id);
    }

    test('an aggregate\'s alpha_sum raised by 1: reputation_aggregates alpha_now of that row', async () => {
      const db = t.database.db;
      const where = <Q extends { where: (...a: any[]) => Q }>(q: Q) => q.where('agent_id', '=', s1.agentId).where('epoch', '=', 1).where('category', '=', 'all');
      await tampered(
        () => where(db.updateTable('reputation_aggregates').set((eb) => ({ alpha_sum: eb('alpha_sum', '+', 1) }))).execute(),
        () => where(db.updateTable('reputation_aggregates').set((eb) => ({ alpha_sum: eb('alpha_sum', '-', 1) }))).execute(),
        [{ projection: 'reputation_aggregates', key: `${s1.agentId}|1|all`, field: 'alpha_now' }],
        1,
      );
    });

    test('an event\'s outcome rewritten: reputation_events outcome, expected from the log', async () => {
      const db = t.database.db;
      const set = (outcome: string) => db.updateTable('reputation_events').set({ outcome }).where('event_id', '=', ev.f.event_id).execute();
      await tampered(() => set('error'), () => set('approved'),
        [{ projection: 'reputation_events', key: ev.f.event_id, field: 'outcome', expected: 'approved', stored: 'error' }], 1);
    });

    test('a day bucket deleted: reputation_day_buckets names the missing row', async () => {
      const db = t.database.db;
      const dayStart = Math.floor(day0 / DAY) * DAY;
      const row = await db.selectFrom('reputation_day_buckets').selectAll()
        .where('agent_id', '=', s1.agentId).where('category', '=', 'task_completion').where('day_start', '=', dayStart).executeTakeFirstOrThrow();
      expect(row.approved_w).toBe(0.5);
      await tampered(
        () => db.deleteFrom('reputation_day_buckets').where('agent_id', '=', s1.agentId).where('category', '=', 'task_completion').where('day_start', '=', dayStart).execute(),
        () => db.insertInto('reputation_day_buckets').values(row).execute(),
        [{ projection: 'reputation_day_buckets', key: `${s1.agentId}|1|task_completion|${dayStart}`, field: '*', expected: 'row', stored: 'no row' }],
        1,
      );
    });

    test('a dispute\'s status changed and an event row with no log entry: both reported', async () => {
      const db = t.database.db;
      const d = await db.selectFrom('reputation_disputes').selectAll().where('event_id', '=', ev.d.event_id).executeTakeFirstOrThrow();
      const stray = { ...(await db.selectFrom('reputation_events').selectAll().where('event_id', '=', ev.a.event_id).executeTakeFirstOrThrow()),
        event_id: '0190a000-0000-7000-8000-000000000001', ref_id: 'never logged', log_index: 1_000_000 };
      await tampered(
        async () => {
          await db.updateTable('reputation_disputes').set({ status: 'upheld' }).where('dispute_id', '=', d.dispute_id).execute();
          await db.insertInto('reputation_events').values(stray).execute();
        },
        async () => {
          await db.updateTable('reputation_disputes').set({ status: 'dismissed' }).where('dispute_id', '=', d.dispute_id).execute();
          await db.deleteFrom('reputation_events').where('event_id', '=', stray.event_id).execute();
        },
        [
          { projection: 'reputation_disputes', key: d.dispute_id, field: 'status', expected: 'dismissed', stored: 'upheld' },
          { projection: 'reputation_events', key: stray.event_id, field: '*', expected: 'no row', stored: 'row' },
        ],
        2,
      );
    });

    test('private text rewritten (a rating\'s note, a dispute\'s reason): reported against the SHA-256 the log keeps', async () => {
      const db = t.database.db;
      const d = await db.selectFrom('reputation_disputes').select(['dispute_id', 'reason']).where('event_id', '=', ev.b.event_id).executeTakeFirstOrThrow();
      expect(d.reason).toBe('not what happened');
      await tampered(
        async () => {
          await db.updateTable('reputation_events').set({ note: 'added later' }).where('event_id', '=', ev.a.event_id).execute();
          await db.updateTable('reputation_disputes').set({ reason: 'another reason' }).where('dispute_id', '=', d.dispute_id).execute();
        },
        async () => {
          await db.updateTable('reputation_events').set({ note: null }).where('event_id', '=', ev.a.event_id).execute();
          await db.updateTable('reputation_disputes').set({ reason: d.reason }).where('dispute_id', '=', d.dispute_id).execute();
        },
        [
          { projection: 'reputation_events', key: ev.a.event_id, field: 'note', expected: null },
          { projection: 'reputation_disputes', key: d.dispute_id, field: 'reason' },
        ],
        2,
      );
    });

    test('an entry\'s text rewritten: trust_log leaf_hash of that index, and the projections now disagree with the log', async () => {
      const db = t.database.db;
      const row = await db.selectFrom('trust_log_entries').select(['entry', 'leaf_hash']).where('log_index', '=', ev.f.log_index).executeTakeFirstOrThrow();
      expect(row.entry).toContain('"outcome":"approved"');
      const forged = row.entry.replace('"outcome":"approved"', '"outcome":"error"');
      const write = (entry: string) => db.updateTable('trust_log_entries').set({ entry }).where('log_index', '=', ev.f.log_index).execute();
      await tampered(() => write(forged), () => write(row.entry), [
        { projection: 'trust_log', key: String(ev.f.log_index), field: 'leaf_hash', stored: row.leaf_hash },
        // Replay believes the log: the stored event says approved where the (forged) entry says error.
        { projection: 'reputation_events', key: ev.f.event_id, field: 'outcome', expected: 'error', stored: 'approved' },
        { projection: 'reputation_aggregates', key: `${s1.agentId}|1|all`, field: 'alpha_now' },
      ]);
    });

    test('decision trace: reputation_score\'s log indexes are the events\' log_index from the history; decisions and epoch listed', async () => {
      const hist = await t.request('GET', `/v1/agents/${s1.agentId}/reputation/history?include_events=true`);
      expect(hist.status).toBe(200);
      const histIndexes = (hist.body.events as { log_index: number }[]).map((e) => e.log_index);
      expect(histIndexes.sort((x, y) => y - x)).toEqual([ev.f, ev.d, ev.b, ev.a].map((e) => e.log_index));

      const res = await admin(`/admin/trust/decision-trace/${s1.agentId}`);
      expect(res.status).toBe(200);
      const facts = res.body.facts;
      expect(res.body).toMatchObject({ agent_id: s1.agentId, generated_at: new Date(t.clock.now()).toISOString(), epochs: hist.body.epochs });
      expect(facts.current_epoch).toMatchObject({ value: 1, log_indexes: [hist.body.epochs[0].open_log_index] });
      expect(facts.reputation_score).toMatchObject({
        value: hist.body.reputation.score,
        log_indexes: histIndexes,
        suppressed_event_log_indexes: [ev.b.log_index],
        upheld_dispute_log_indexes: [decisions.upheld.log_index],
        dismissed_dispute_log_indexes: [decisions.dismissed.log_index],
        inputs: { beta_alpha: hist.body.reputation.beta_alpha, beta_beta: hist.body.reputation.beta_beta, event_count: 4, signal_count: 3, epoch: 1 },
      });
      expect(facts.reputation_status).toMatchObject({ value: 'scored', log_indexes: histIndexes });
      expect(facts.trust_levels.value).toEqual(['floor', 'established']);
      expect(res.body.log_entries_by_kind).toEqual({
        'epoch.opened': 1, 'reputation.interaction': 4, 'reputation.dispute.filed': 2, 'reputation.dispute.decided': 2,
      });
      // Each listed index is an entry of the log about this agent.
      for (const i of histIndexes) {
        const entry = (await t.request('GET', `/v1/trust/log/entries?start=${i}&end=${i + 1}`)).body.entries[0].entry;
        expect(entry).toMatchObject({ index: i, kind: 'reputation.interaction', agent_id: s1.agentId });
      }

      const other = await admin(`/admin/trust/decision-trace/${s2.agentId}`);
      expect(other.body.facts.reputation_score).toMatchObject({
        log_indexes: [ev.e.log_index, ev.c.log_index], suppressed_event_log_indexes: [], upheld_dispute_log_indexes: [], dismissed_dispute_log_indexes: [],
      });

      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
        const unknown = await admin(`/admin/trust/decision-trace/${id}`);
        expect(unknown.status).toBe(404);
        expect(unknown.body.error_code).toBe('AGENT_NOT_FOUND');
      }
    });

    test('adoption: log size, epochs and reputation counts, with the 30-day window', async () => {
      const res = await admin('/admin/trust/adoption');
      expect(res.status).toBe(200);
      // Day 40: the window starts at day 10 exactly, so the day-10 and day-35 ratings are in it.
      expect(res.body).toMatchObject({
        status: 'success', window_days: 30, trust_log_entries: 18, epochs_opened_by: { registration: 7 },
        reputation: { events: 6, events_in_window: 3, subjects: 2, raters: 4, disputes: { open: 1, upheld: 1, dismissed: 1 } },
      });
      t.clock.advance(1);
      expect((await admin('/admin/trust/adoption')).body.reputation.events_in_window).toBe(1);
    });
  });
});
