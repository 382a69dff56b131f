import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/engines';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

/**
 * Reputation over HTTP on a real database: interaction ratings, the Beta score (checked against
 * figures worked out by hand below), the history per custody epoch, disputes and admin decisions.
 * Rules under test: a rater that is not staked, sponsored or established (30 days old) weighs 0.5;
 * approved adds w to alpha, error adds w to beta, rejected adds 0.25·w to beta; weights halve every
 * 30 days; score = α/(α+β) from a Beta(1,1) prior; variance = αβ/((α+β)²(α+β+1)); sub-signals decay
 * linearly to 0 over 90 days and need 3 interactions in their category.
 */

const DAY = 86_400_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ADMIN = { 'x-admin-key': 'test-admin-key' };

// One database for the file (a PGlite database takes long to create); each describe block starts its
// own app on it, one after the other, with its own clock and settings. Every test registers its own agents.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.close());

/** Starts an app on the file's database; PGlite's socket server frees its one connection slot a moment after the previous app leaves: retry. */
async function start(env: Record<string, string> = {}): Promise<TestApp> {
  for (let i = 0; ; i++) {
    try {
      return await startTestApp({ db, env });
    } catch (e) {
      if (i >= 10 || !/Connection terminated/.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

/** Helpers bound to one app. */
function on(t: TestApp) {
  const agent = (overrides: Record<string, unknown> = {}) => t.registerAgent(overrides);
  const rate = (rater: RegisteredAgent | string | undefined, subject: RegisteredAgent | string, body: Record<string, unknown> = {}) =>
    t.request('POST', '/v1/feedback/interaction', {
      token: typeof rater === 'string' || rater === undefined ? rater : rater.apiKey,
      body: {
        subject_agent_id: typeof subject === 'string' ? subject : subject.agentId,
        ref_type: 'task', ref_id: `task-${randomUUID()}`, outcome: 'approved', category: 'task_completion', ...body,
      },
    });
  const history = (agentId: string, query = '') => t.request('GET', `/v1/agents/${agentId}/reputation/history${query}`);
  /** The public passport (GET /v1/agents/{id}/passport), as `body`. */
  const passport = async (agentId: string) => {
    const res = await t.request('GET', `/v1/agents/${agentId}/passport`);
    expect(res.status).toBe(200);
    return { status: res.status, body: res.body.passport };
  };
  const dispute = (who: RegisteredAgent | string | undefined, body: Record<string, unknown>) =>
    t.request('POST', '/v1/reputation/dispute', { token: typeof who === 'string' || who === undefined ? who : who.apiKey, body });
  const decide = (disputeId: string, body: Record<string, unknown>, headers: Record<string, string> = ADMIN) =>
    t.request('POST', `/admin/disputes/${disputeId}/decision`, { body, headers });
  return { agent, rate, history, passport, dispute, decide };
}

/** A rated event on `subject` by a fresh (cheap) rater, returning the event. */
async function rated(h: ReturnType<typeof on>, subject: RegisteredAgent, body: Record<string, unknown> = {}) {
  const rater = await h.agent();
  const r = await h.rate(rater, subject, body);
  expect(r.status).toBe(201);
  return r.body as { event_id: string; log_index: number };
}

describe('POST /v1/feedback/interaction', () => {
  let t: TestApp;
  let h: ReturnType<typeof on>;
  beforeAll(async () => {
    t = await start();
    h = on(t);
  });
  afterAll(async () => t?.close());

  test('201 with the event, its log index and leaf hash; the log entry holds the rating, the note only as a hash', async () => {
    const [rater, subject] = [await h.agent(), await h.agent()];
    const res = await h.rate(rater, subject, { ref_type: 'tool_call', ref_id: 'call-1', outcome: 'error', category: 'accuracy', note: 'wrong units' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: 'success', duplicate: false, event_id: expect.stringMatching(UUID), log_index: expect.any(Number),
      leaf_hash: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/), subject_agent_id: subject.agentId, epoch: 1,
      outcome: 'error', category: 'accuracy', rater_weight: 0.5, created_at: new Date(t.clock.now()).toISOString(),
    });
    expect(res.body._svc).toHaveProperty('served_by');
    const entries = await t.request('GET', `/v1/trust/log/entries?start=${res.body.log_index}&end=${res.body.log_index + 1}`);
    expect(entries.status).toBe(200);
    const e = entries.body.entries[0];
    expect(e.leaf_hash).toBe(res.body.leaf_hash);
    expect(e.entry).toMatchObject({
      index: res.body.log_index, kind: 'reputation.interaction', agent_id: subject.agentId, epoch: 1,
      data: { event_id: res.body.event_id, rater_agent_id: rater.agentId, ref_type: 'tool_call', ref_id: 'call-1', outcome: 'error', category: 'accuracy', rater_weight: 0.5 },
    });
    expect(e.entry.data.note_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(e.entry_jcs).not.toContain('wrong units');
  });

  test('the same (rater, subject, ref_type, ref_id) again: 200 duplicate with the first event, nothing new logged or counted', async () => {
    const [rater, subject] = [await h.agent(), await h.agent()];
    const body = { ref_type: 'message', ref_id: 'msg-42', outcome: 'approved', category: 'responsiveness' };
    const first = await h.rate(rater, subject, body);
    expect(first.status).toBe(201);
    const size = (await t.request('GET', '/v1/trust/log/entries?start=0')).body.tree_size;
    const again = await h.rate(rater, subject, { ...body, outcome: 'error' }); // a repeat answers the first, whatever it says
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true, event_id: first.body.event_id, log_index: first.body.log_index, outcome: 'approved' });
    // The repeat answers exactly what the first did (a client retrying after a lost response gets the same event).
    const { duplicate: _d1, _svc: _s1, ...firstEvent } = first.body;
    const { duplicate: _d2, _svc: _s2, ...againEvent } = again.body;
    expect(againEvent).toEqual(firstEvent);
    expect(againEvent.leaf_hash).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect((await t.request('GET', '/v1/trust/log/entries?start=0')).body.tree_size).toBe(size);
    expect((await h.passport(subject.agentId)).body.reputation).toMatchObject({ event_count: 1, signal_count: 1, beta_alpha: 1.5, beta_beta: 1 });
    // Another ref_id, or the same ref_id under another ref_type, is another rating.
    expect((await h.rate(rater, subject, { ...body, ref_id: 'msg-43' })).status).toBe(201);
    expect((await h.rate(rater, subject, { ...body, ref_type: 'task' })).status).toBe(201);
  });

  test.each([
    ['missing ref_type', { ref_type: undefined }, 'INTERACTION_REF_TYPE_REQUIRED'],
    ['null ref_type', { ref_type: null }, 'INTERACTION_REF_TYPE_REQUIRED'],
    ['unknown ref_type', { ref_type: 'url' }, 'INTERACTION_REF_INVALID'],
    ['numeric ref_type', { ref_type: 3 }, 'INTERACTION_REF_INVALID'],
    ['missing ref_id', { ref_id: undefined }, 'INTERACTION_REF_INVALID'],
    ['empty ref_id', { ref_id: '' }, 'INTERACTION_REF_INVALID'],
    ['whitespace ref_id', { ref_id: ' \t ' }, 'INTERACTION_REF_INVALID'],
    ['ref_id over 256', { ref_id: 'x'.repeat(257) }, 'INTERACTION_REF_INVALID'],
    ['unknown outcome', { outcome: 'great' }, 'VALIDATION_FAILED'],
    ['unknown category', { category: 'speed' }, 'VALIDATION_FAILED'],
    ['missing outcome', { outcome: undefined }, 'VALIDATION_FAILED'],
  ])('422 for %s: %s; nothing stored', async (_name, body, code) => {
    const [rater, subject] = [await h.agent(), await h.agent()];
    const res = await h.rate(rater, subject, body);
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe(code);
    expect(await t.database.db.selectFrom('reputation_events').select('event_id').where('rater_agent_id', '=', rater.agentId).execute()).toEqual([]);
  });

  test('422 for a subject_agent_id that is not a UUID', async () => {
    const rater = await h.agent();
    const res = await h.rate(rater, 'not-a-uuid');
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('VALIDATION_FAILED');
  });

  test('404 SUBJECT_NOT_FOUND for an unknown agent', async () => {
    const res = await h.rate(await h.agent(), randomUUID());
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('SUBJECT_NOT_FOUND');
  });

  test('404 RATER_NOT_FOUND once the rater revoked its passport (its root key still authenticates)', async () => {
    const [rater, subject] = [await h.agent(), await h.agent()];
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: rater.apiKey })).status).toBe(200);
    expect((await t.request('GET', '/v1/me', { token: rater.apiKey })).status).toBe(200);
    const res = await h.rate(rater, subject);
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('RATER_NOT_FOUND');
    // A suspended rater does not get that far: its key no longer authenticates.
    const suspended = await h.agent();
    await t.database.db.updateTable('agents').set({ status: 'suspended' }).where('agent_id', '=', suspended.agentId).execute();
    expect((await h.rate(suspended, subject)).body.error_code).toBe('INVALID_API_KEY');
    expect((await h.passport(subject.agentId)).body.reputation.event_count).toBe(0);
  });

  test('403 REPUTATION_SUBJECT_INELIGIBLE: self, same owner, suspended subject, revoked subject', async () => {
    const rater = await h.agent({ owner_identifier: 'shared-owner@example.test' });
    const sibling = await h.agent({ owner_identifier: 'shared-owner@example.test' });
    const self = await h.rate(rater, rater);
    expect(self.status).toBe(403);
    expect(self.body).toMatchObject({ error_code: 'REPUTATION_SUBJECT_INELIGIBLE', reason: 'self' });
    // The subject id in upper case is still the rater itself.
    expect((await h.rate(rater, rater.agentId.toUpperCase())).body.reason).toBe('self');
    const same = await h.rate(rater, sibling);
    expect(same.status).toBe(403);
    expect(same.body).toMatchObject({ error_code: 'REPUTATION_SUBJECT_INELIGIBLE', reason: 'same_owner' });

    const suspended = await h.agent();
    await t.database.db.updateTable('agents').set({ status: 'suspended' }).where('agent_id', '=', suspended.agentId).execute();
    const s = await h.rate(rater, suspended);
    expect(s.status).toBe(403);
    expect(s.body).toMatchObject({ error_code: 'REPUTATION_SUBJECT_INELIGIBLE', reason: 'subject_inactive' });

    const revoked = await h.agent();
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: revoked.apiKey })).status).toBe(200);
    expect((await h.rate(rater, revoked)).body).toMatchObject({ error_code: 'REPUTATION_SUBJECT_INELIGIBLE', reason: 'subject_inactive' });
    expect(await t.database.db.selectFrom('reputation_events').select('event_id').where('rater_agent_id', '=', rater.agentId).execute()).toEqual([]);
  });

  test('401 INVALID_API_KEY without a key or with a wrong one', async () => {
    const subject = await h.agent();
    for (const token of [undefined, 'svc_wrong']) {
      const res = await h.rate(token, subject);
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('INVALID_API_KEY');
    }
    expect((await h.passport(subject.agentId)).body.reputation.event_count).toBe(0);
  });
});

describe('interaction ratings per rater per UTC day (SVC_INTERACTION_RATINGS_PER_DAY=2)', () => {
  let t: TestApp;
  let h: ReturnType<typeof on>;
  beforeAll(async () => {
    t = await start({ SVC_INTERACTION_RATINGS_PER_DAY: '2' });
    h = on(t);
  });
  afterAll(async () => t?.close());

  test('the third rating of the day is 429 with retry-after to the next UTC midnight; a repeat still answers; the next day works', async () => {
    const [rater, a, b, c] = [await h.agent(), await h.agent(), await h.agent(), await h.agent()];
    const first = await h.rate(rater, a, { ref_id: 'one' });
    expect(first.status).toBe(201);
    expect((await h.rate(rater, b, { ref_id: 'two' })).status).toBe(201);
    const third = await h.rate(rater, c, { ref_id: 'three' });
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ error_code: 'INTERACTION_RATE_LIMITED', limit: 2 });
    // The manual clock starts at 12:00 UTC: 12 hours to midnight.
    const midnight = Math.floor(t.clock.now() / DAY) * DAY + DAY;
    expect(third.headers['retry-after']).toBe(String((midnight - t.clock.now()) / 1000));
    expect(third.headers['retry-after']).toBe('43200');
    expect(third.body.resets_at).toBe(new Date(midnight).toISOString());
    // The cap is per rater: another rater is not limited.
    expect((await h.rate(await h.agent(), c, { ref_id: 'three' })).status).toBe(201);
    // A repeat of a rating already given is not a new rating.
    const again = await h.rate(rater, a, { ref_id: 'one' });
    expect(again.status).toBe(200);
    expect(again.body.event_id).toBe(first.body.event_id);
    // One second before midnight: still limited (retry-after 1); at midnight: a new day.
    t.clock.set(midnight - 1000);
    expect((await h.rate(rater, c, { ref_id: 'three' })).headers['retry-after']).toBe('1');
    t.clock.set(midnight);
    expect((await h.rate(rater, c, { ref_id: 'three' })).status).toBe(201);
  });

  test('ratings sent together (one shared transaction): the cap holds, a repeat answers the first, every rating is one log entry, the projections equal the replay', async () => {
    const subject = await h.agent();
    const raters = await Promise.all(Array.from({ length: 12 }, () => h.agent()));
    const sizeBefore = (await t.request('GET', '/v1/trust/log/entries?start=0&end=1')).body.tree_size as number;
    // Each rater sends three different ratings (cap 2) and one repeat of its first, all at once.
    const sent = raters.flatMap((r) => [
      h.rate(r, subject, { ref_id: 'a', outcome: 'approved' }),
      h.rate(r, subject, { ref_id: 'b', outcome: 'error' }),
      h.rate(r, subject, { ref_id: 'c', outcome: 'rejected' }),
      h.rate(r, subject, { ref_id: 'a', outcome: 'approved' }),
    ]);
    const answers = await Promise.all(sent);
    // Per rater: two ratings made (the cap); the two requests for 'a' are one rating and its repeat
    // (201 and 200, same event) unless 'a' came after the two others (then both are over the cap).
    for (let i = 0; i < raters.length; i++) {
      const mine = answers.slice(i * 4, i * 4 + 4);
      expect(mine.filter((a) => a.status === 201)).toHaveLength(2);
      const [a, , , again] = mine;
      const pair = [a.status, again.status].sort();
      if (pair[0] === 429) {
        expect(pair).toEqual([429, 429]);
      } else {
        expect(pair).toEqual([200, 201]);
        expect(again.body.event_id).toBe(a.body.event_id);
      }
      for (const over of mine.filter((x) => x.status === 429)) expect(over.body.error_code).toBe('INTERACTION_RATE_LIMITED');
    }
    const created = answers.filter((a) => a.status === 201);
    expect(new Set(created.map((a) => a.body.log_index)).size).toBe(24);
    const log = await t.request('GET', `/v1/trust/log/entries?start=${sizeBefore}&end=${sizeBefore + 1000}`);
    expect(log.body.tree_size).toBe(sizeBefore + 24);
    const kinds = (log.body.entries as { entry: { kind: string; data: { event_id: string } } }[]).map((e) => e.entry);
    expect(kinds.every((e) => e.kind === 'reputation.interaction')).toBe(true);
    expect(new Set(kinds.map((e) => e.data.event_id))).toEqual(new Set(created.map((a) => a.body.event_id)));
    const rep = (await h.passport(subject.agentId)).body.reputation;
    expect(rep.event_count).toBe(24);
    // The parity check replays the log: it rebuilds every subtree hash and the aggregates, buckets and
    // events, and compares them with what the shared transactions stored.
    const parity = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(parity.body.ok).toBe(true);
  });
});

describe('reputation figures against hand-computed values', () => {
  let t: TestApp;
  let h: ReturnType<typeof on>;
  beforeAll(async () => {
    t = await start();
    h = on(t);
  });
  afterAll(async () => t?.close());

  test('an unrated agent: the Beta(1,1) prior', async () => {
    const s = await h.agent();
    const rep = (await h.passport(s.agentId)).body.reputation;
    // α = β = 1: score 1/2, variance 1·1/(2²·3) = 1/12; Beta(1,1) is uniform, so its 2.5 % and 97.5 % quantiles are 0.025 and 0.975.
    expect(rep).toMatchObject({
      score: 0.5, status: 'insufficient_data', variance: 0.08333333, confidence_interval: [0.025, 0.975], beta_alpha: 1, beta_beta: 1,
      event_count: 0, signal_count: 0, beta_half_life_days: 30, scoring_model: 'beta_v1', decay_half_life_days: 90, last_updated: null,
    });
  });

  test('a scripted history: decay across half-lives, cheap and established raters, an upheld and a dismissed dispute', async () => {
    const subject = await h.agent();
    const established = await h.agent();
    // 31 days later the rater is established (active, unfrozen, at least 30 days old): weight 1.
    t.clock.advanceDays(31);
    const T0 = t.clock.now();
    const e1 = await h.rate(established, subject, { outcome: 'approved', category: 'task_completion' });
    expect(e1.status).toBe(201);
    expect(e1.body.rater_weight).toBe(1);

    // At T0: α = 1 + 1 = 2, β = 1. score = 2/3 = 0.666667; variance = 2·1/(3²·4) = 2/36 = 0.05555556.
    // Beta(2,1) has cdf x², so its quantiles are sqrt(0.025) = 0.158114 and sqrt(0.975) = 0.987421.
    let rep = (await h.passport(subject.agentId)).body.reputation;
    expect(rep).toMatchObject({
      score: 0.666667, variance: 0.05555556, confidence_interval: [0.158114, 0.987421], beta_alpha: 2, beta_beta: 1,
      event_count: 1, signal_count: 1, status: 'insufficient_data', last_updated: new Date(T0).toISOString(),
    });

    // One half-life later, two fresh raters (not established: weight 0.5).
    t.clock.advanceDays(30);
    const T1 = t.clock.now();
    const cheap1 = await h.agent();
    const cheap2 = await h.agent();
    const e2 = await h.rate(cheap1, subject, { outcome: 'error', category: 'accuracy' });
    const e3 = await h.rate(cheap2, subject, { outcome: 'rejected', category: 'task_completion' });
    expect([e2.body.rater_weight, e3.body.rater_weight]).toEqual([0.5, 0.5]);

    // At T1: the approval has halved: α = 1 + 1·2^(-30/30) = 1.5.
    // β = 1 + 0.5 (error, w 0.5) + 0.25·0.5 (rejected, w 0.5) = 1.625.
    // score = 1.5/3.125 = 0.48; variance = 1.5·1.625/(3.125²·4.125) = 2.4375/40.283203125 = 0.06050909.
    rep = (await h.passport(subject.agentId)).body.reputation;
    expect(rep).toMatchObject({ beta_alpha: 1.5, beta_beta: 1.625, score: 0.48, variance: 0.06050909, event_count: 3, signal_count: 3, status: 'scored' });
    expect(rep.last_updated).toBe(new Date(T1).toISOString());

    // Half a half-life later (15 days): everything is multiplied by 2^(-1/2) = 0.70710678.
    t.clock.advanceDays(15);
    // α = 1 + 0.5·0.70710678 = 1.35355339; β = 1 + 0.625·0.70710678 = 1.44194174.
    // score = 1.35355339/2.79549513 = 0.48419093; variance = 1.35355339·1.44194174/(2.79549513²·3.79549513) = 0.06580171.
    const expected = { beta_alpha: 1.353553, beta_beta: 1.441942, score: 0.484191, variance: 0.06580171, event_count: 3, signal_count: 3, status: 'scored' };
    rep = (await h.passport(subject.agentId)).body.reputation;
    expect(rep).toMatchObject(expected);
    const ci = rep.confidence_interval as [number, number];
    expect(ci[0]).toBeLessThan(rep.score);
    expect(ci[1]).toBeGreaterThan(rep.score);
    // Fewer than 3 interactions in every category: each sub-signal is null (visibility is decomposed by default).
    expect((await h.passport(subject.agentId)).body.reputation_sub_signals).toEqual({ task_completion: null, accuracy: null, responsiveness: null });

    // The history route says the same, and lists the events newest first with their weight now.
    let hist = await h.history(subject.agentId, '?include_events=true');
    expect(hist.status).toBe(200);
    expect(hist.body).toMatchObject({ agent_id: subject.agentId, epoch: 1, current_epoch: 1, as_of: new Date(t.clock.now()).toISOString(), reputation: expected });
    expect(hist.body.reputation_sub_signals).toEqual({ task_completion: null, accuracy: null, responsiveness: null });
    const byId = (id: string) => (hist.body.events as any[]).find((e) => e.event_id === id);
    // T1 events first (same instant: by event_id descending), then the T0 one.
    expect((hist.body.events as any[]).map((e) => e.event_id)).toEqual([...[e2.body.event_id, e3.body.event_id].sort().reverse(), e1.body.event_id]);
    // weight_now: 1·2^(-45/30) = 0.353553; 0.5·2^(-15/30) = 0.353553.
    expect(byId(e1.body.event_id)).toMatchObject({ log_index: e1.body.log_index, rater_weight: 1, weight_now: 0.353553, suppressed: false, outcome: 'approved', rater_agent_id: established.agentId });
    expect(byId(e2.body.event_id)).toMatchObject({ log_index: e2.body.log_index, rater_weight: 0.5, weight_now: 0.353553, suppressed: false, outcome: 'error' });
    expect(byId(e3.body.event_id)).toMatchObject({ log_index: e3.body.log_index, rater_weight: 0.5, weight_now: 0.353553, suppressed: false, outcome: 'rejected' });

    // The subject disputes the error; an admin upholds it. The error no longer counts:
    // β = 1 + 0.125·0.70710678 = 1.08838835; α unchanged 1.35355339.
    // score = 1.35355339/2.44194174 = 0.55429389; variance = 1.35355339·1.08838835/(2.44194174²·3.44194174) = 0.07177698.
    // Two counted events remain: insufficient_data again.
    const d1 = await h.dispute(subject, { event_id: e2.body.event_id, reason: 'that call returned the right units' });
    expect(d1.status).toBe(201);
    const up = await h.decide(d1.body.dispute_id, { decision: 'upheld', note: 'checked the call log' });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ dispute_id: d1.body.dispute_id, event_id: e2.body.event_id, dispute_status: 'upheld', event_weight: 0, log_index: expect.any(Number) });
    const withoutError = { beta_alpha: 1.353553, beta_beta: 1.088388, score: 0.554294, variance: 0.07177698, event_count: 3, signal_count: 2, status: 'insufficient_data' };
    expect((await h.passport(subject.agentId)).body.reputation).toMatchObject(withoutError);
    hist = await h.history(subject.agentId, '?include_events=true');
    expect(hist.body.reputation).toMatchObject(withoutError);
    expect(byId(e2.body.event_id)).toMatchObject({ suppressed: true, weight_now: 0, rater_weight: 0.5 });
    expect(byId(e3.body.event_id)).toMatchObject({ suppressed: false, weight_now: 0.353553 });

    // A dismissed dispute changes nothing.
    const d2 = await h.dispute(subject, { event_id: e3.body.event_id, reason: 'not rejected' });
    expect(d2.status).toBe(201);
    const dis = await h.decide(d2.body.dispute_id, { decision: 'dismissed' });
    expect(dis.body).toMatchObject({ dispute_status: 'dismissed', event_weight: 0.5 });
    expect((await h.passport(subject.agentId)).body.reputation).toMatchObject(withoutError);
    hist = await h.history(subject.agentId, '?include_events=true');
    expect(byId(e3.body.event_id)).toMatchObject({ suppressed: false, weight_now: 0.353553 });

    // A second decision on either is refused.
    for (const id of [d1.body.dispute_id, d2.body.dispute_id]) {
      const again = await h.decide(id, { decision: 'dismissed' });
      expect(again.status).toBe(409);
      expect(again.body.error_code).toBe('DISPUTE_ALREADY_DECIDED');
    }
    expect((await h.decide(d1.body.dispute_id, { decision: 'upheld' })).body).toMatchObject({ error_code: 'DISPUTE_ALREADY_DECIDED', status: 'upheld' });
    expect((await h.passport(subject.agentId)).body.reputation).toMatchObject(withoutError);

    // 90 more days: each weight is 2^(-3) of what it was: α = 1 + 0.35355339/8 = 1.04419417, β = 1 + 0.08838835/8 = 1.01104854.
    t.clock.advanceDays(90);
    expect((await h.passport(subject.agentId)).body.reputation).toMatchObject({ beta_alpha: 1.044194, beta_beta: 1.011049 });
  });

  test('sub-signals: linear 90-day decay from 3 interactions in a category; absent when the subject shows aggregate_only', async () => {
    const subject = await h.agent();
    const t0 = t.clock.now();
    await rated(h, subject, { outcome: 'approved', category: 'accuracy' });
    t.clock.advanceDays(18);
    await rated(h, subject, { outcome: 'approved', category: 'accuracy' });
    // Two accuracy interactions: still null.
    expect((await h.passport(subject.agentId)).body.reputation_sub_signals.accuracy).toBeNull();
    await rated(h, subject, { outcome: 'error', category: 'accuracy' });
    await rated(h, subject, { outcome: 'approved', category: 'responsiveness' });
    t.clock.advanceDays(9);
    expect(t.clock.now() - t0).toBe(27 * DAY);
    // Ages 27, 9 and 9 days; factors 1 - 27/90 = 0.7 and 1 - 9/90 = 0.9; all raters are cheap (w 0.5).
    // α = 1 + 0.5·0.7 + 0.5·0.9 = 1.8; β = 1 + 0.5·0.9 = 1.45; score = 1.8/3.25 = 0.553846.
    const subs = (await h.passport(subject.agentId)).body.reputation_sub_signals;
    expect(subs.accuracy).toMatchObject({ score: 0.553846, beta_alpha: 1.8, beta_beta: 1.45, interaction_count: 3, decay: 'linear_90_days' });
    expect(subs.accuracy.confidence_interval[0]).toBeLessThan(0.553846);
    expect(subs.accuracy.confidence_interval[1]).toBeGreaterThan(0.553846);
    expect(subs.task_completion).toBeNull();
    expect(subs.responsiveness).toBeNull();
    expect((await h.history(subject.agentId)).body.reputation_sub_signals.accuracy).toEqual(subs.accuracy);

    // 62.75 days on (06:00 UTC), the first event is 89.75 days old: the 90-day window starts at 06:00 of the day it was
    // given (12:00), so that day is partly expired and the event counts from its own time, factor 1 - 89.75/90 = 1/360.
    // The others are 71.75 days old: factor 1 - 71.75/90 = 18.25/90.
    // α = 1 + 0.5/360 + 0.5·18.25/90 = 1 + 0.00138889 + 0.10138889 = 1.10277778; β = 1 + 0.10138889 = 1.10138889.
    t.clock.advance(62.75 * DAY);
    expect((await h.passport(subject.agentId)).body.reputation_sub_signals.accuracy).toMatchObject({ beta_alpha: 1.102778, beta_beta: 1.101389 });
    // Half a day later the first event is 90.25 days old: out of the window, which leaves 2 interactions in it: null again.
    t.clock.advance(0.5 * DAY);
    expect((await h.passport(subject.agentId)).body.reputation_sub_signals.accuracy).toBeNull();
    // A third one inside the window brings it back: α = 1 + 0.5·17.75/90 + 0.5 = 1.59861111, β = 1 + 0.5·17.75/90 = 1.09861111.
    await rated(h, subject, { outcome: 'approved', category: 'accuracy' });
    expect((await h.passport(subject.agentId)).body.reputation_sub_signals.accuracy).toMatchObject({ beta_alpha: 1.598611, beta_beta: 1.098611, interaction_count: 3 });

    // At 93 days the first event is long gone, the two of day 18 are 75 days old (factor 1 - 75/90 = 1/6) and the
    // new one 2.75 days old (factor 1 - 2.75/90 = 0.969444). α = 1 + 0.5/6 + 0.5·0.969444 = 1.568056;
    // β = 1 + 0.5/6 = 1.083333; score = 1.568056/2.651389 = 0.591409. Still 3 interactions in the window.
    t.clock.advance(2.75 * DAY);
    expect(t.clock.now() - t0).toBe(93 * DAY);
    const later = (await h.passport(subject.agentId)).body.reputation_sub_signals.accuracy;
    expect(later).toMatchObject({ beta_alpha: 1.568056, beta_beta: 1.083333, score: 0.591409, interaction_count: 3 });

    const described = await t.request('POST', '/v1/agents/passport/description', { token: subject.apiKey, body: { reputation_sub_signal_visibility: 'aggregate_only' } });
    expect(described.status).toBe(200);
    const p = await h.passport(subject.agentId);
    expect(p.body.reputation_sub_signal_visibility).toBe('aggregate_only');
    expect(p.body).not.toHaveProperty('reputation_sub_signals');
    expect(p.body.reputation.event_count).toBe(5);
    const hist = await h.history(subject.agentId);
    expect(hist.body).not.toHaveProperty('reputation_sub_signals');
    expect(hist.body.reputation.event_count).toBe(5);
  });
});

describe('GET /v1/agents/{id}/reputation/history, disputes and decisions', () => {
  let t: TestApp;
  let h: ReturnType<typeof on>;
  beforeAll(async () => {
    t = await start();
    h = on(t);
  });
  afterAll(async () => t?.close());

  test('the current epoch by default; epoch=1 is the same; epoch=2 404 EPOCH_NOT_FOUND; unknown agent 404 AGENT_NOT_FOUND', async () => {
    const subject = await h.agent();
    await rated(h, subject, { outcome: 'approved' });
    const def = await h.history(subject.agentId);
    expect(def.status).toBe(200);
    expect(def.body).toMatchObject({
      status: 'success', agent_id: subject.agentId, epoch: 1, current_epoch: 1,
      epochs: [{ epoch: 1, opened_by: 'registration', closed_at: null, open_log_index: expect.any(Number) }],
      reputation: { beta_alpha: 1.5, beta_beta: 1, event_count: 1 },
    });
    expect(def.body).not.toHaveProperty('events');
    const one = await h.history(subject.agentId, '?epoch=1');
    expect(one.body).toEqual(def.body);
    const two = await h.history(subject.agentId, '?epoch=2');
    expect(two.status).toBe(404);
    expect(two.body).toMatchObject({ error_code: 'EPOCH_NOT_FOUND', epochs: [1] });
    const unknown = await h.history(randomUUID());
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_code).toBe('AGENT_NOT_FOUND');
    expect((await h.history(subject.agentId, '?epoch=0')).status).toBe(422);
  });

  test('include_events pages with limit=2 over 5 events: newest first, no duplicates, no gaps', async () => {
    const subject = await h.agent();
    const made: { event_id: string; log_index: number }[] = [];
    // Three at one instant (ties broken by event_id), then two a minute apart.
    for (let i = 0; i < 3; i++) made.push(await rated(h, subject));
    t.clock.advance(60_000);
    made.push(await rated(h, subject, { outcome: 'error' }));
    t.clock.advance(60_000);
    made.push(await rated(h, subject, { outcome: 'rejected' }));

    const seen: any[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const res = await h.history(subject.agentId, `?include_events=true&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      pages.push(res.body.events.length);
      seen.push(...res.body.events);
      cursor = res.body.next_cursor;
    } while (cursor !== null && pages.length < 10);
    expect(pages).toEqual([2, 2, 1]);
    const ids = seen.map((e) => e.event_id);
    expect(new Set(ids).size).toBe(5);
    const tied = made.slice(0, 3).map((e) => e.event_id).sort().reverse();
    expect(ids).toEqual([made[4].event_id, made[3].event_id, ...tied]);
    for (const e of seen) expect(e.log_index).toBe(made.find((m) => m.event_id === e.event_id)!.log_index);
    // Exactly one page of 5: no cursor.
    const all = await h.history(subject.agentId, '?include_events=true&limit=5');
    expect(all.body.events.map((e: any) => e.event_id)).toEqual(ids);
    expect(all.body.next_cursor).toBeNull();
  });

  test('422 for a bad cursor and a limit outside 1..100', async () => {
    const subject = await h.agent();
    await rated(h, subject);
    const forged = Buffer.from(JSON.stringify({ at: 1 })).toString('base64url');
    for (const cursor of ['garbage', forged, Buffer.from('[1.5,"x"]').toString('base64url')]) {
      const res = await h.history(subject.agentId, `?include_events=true&cursor=${cursor}`);
      expect(res.status).toBe(422);
      expect(res.body.error_code).toBe('INVALID_CURSOR');
    }
    for (const limit of [0, 101, -1]) {
      const res = await h.history(subject.agentId, `?include_events=true&limit=${limit}`);
      expect(res.status).toBe(422);
      expect(res.body.error_code).toBe('VALIDATION_FAILED');
    }
    expect((await h.history(subject.agentId, '?include_events=true&limit=100')).status).toBe(200);
    expect((await h.history(subject.agentId, '?include_events=true&limit=1')).body.events).toHaveLength(1);
  });

  test('POST /v1/reputation/dispute: 201, then each refusal', async () => {
    const subject = await h.agent();
    const other = await h.agent();
    const ev = await rated(h, subject, { outcome: 'error' });
    const otherEv = await rated(h, other, { outcome: 'error' });

    const noKey = await h.dispute(undefined, { event_id: ev.event_id, reason: 'wrong' });
    expect(noKey.status).toBe(401);
    expect(noKey.body.error_code).toBe('INVALID_API_KEY');
    expect((await h.dispute('svc_wrong', { event_id: ev.event_id, reason: 'wrong' })).status).toBe(401);

    const res = await h.dispute(subject, { event_id: ev.event_id, reason: 'the task succeeded' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: 'success', dispute_id: expect.stringMatching(UUID), event_id: ev.event_id, dispute_status: 'open',
      filed_at: new Date(t.clock.now()).toISOString(), log_index: expect.any(Number),
    });
    expect(res.body.log_index).toBeGreaterThan(ev.log_index);
    const entry = (await t.request('GET', `/v1/trust/log/entries?start=${res.body.log_index}&end=${res.body.log_index + 1}`)).body.entries[0];
    expect(entry.entry).toMatchObject({ kind: 'reputation.dispute.filed', agent_id: subject.agentId, data: { dispute_id: res.body.dispute_id, event_id: ev.event_id, event_log_index: ev.log_index } });
    expect(entry.entry_jcs).not.toContain('the task succeeded');

    const twice = await h.dispute(subject, { event_id: ev.event_id, reason: 'again' });
    expect(twice.status).toBe(409);
    expect(twice.body.error_code).toBe('DISPUTE_ALREADY_FILED');

    const notMine = await h.dispute(subject, { event_id: otherEv.event_id, reason: 'not mine' });
    expect(notMine.status).toBe(403);
    expect(notMine.body.error_code).toBe('DISPUTE_NOT_SUBJECT');
    // The rater cannot dispute a rating it gave either.
    const raterId = (await t.database.db.selectFrom('reputation_events').select('rater_agent_id').where('event_id', '=', otherEv.event_id).executeTakeFirstOrThrow()).rater_agent_id;
    expect(raterId).not.toBe(other.agentId);

    const unknown = await h.dispute(subject, { event_id: randomUUID(), reason: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_code).toBe('REPUTATION_EVENT_NOT_FOUND');

    for (const reason of ['   ', '\t\n', '']) {
      const blank = await h.dispute(other, { event_id: otherEv.event_id, reason });
      expect(blank.status).toBe(422);
      expect(blank.body.error_code).toBe('DISPUTE_REASON_INVALID');
    }
    const missing = await h.dispute(other, { event_id: otherEv.event_id });
    expect(missing.status).toBe(422);
    expect(missing.body.error_code).toBe('DISPUTE_REASON_INVALID');
    const badId = await h.dispute(other, { event_id: 'nope', reason: 'x' });
    expect(badId.status).toBe(422);
    expect(badId.body.error_code).toBe('VALIDATION_FAILED');
    // None of the refusals stored a dispute.
    expect(await t.database.db.selectFrom('reputation_disputes').select('dispute_id').where('agent_id', 'in', [subject.agentId, other.agentId]).execute())
      .toEqual([{ dispute_id: res.body.dispute_id }]);
  });

  test('3 disputes per agent per UTC day, then 429 DISPUTE_RATE_LIMITED; the next UTC day works again', async () => {
    const subject = await h.agent();
    const events = [];
    for (let i = 0; i < 5; i++) events.push(await rated(h, subject, { outcome: 'error' }));
    for (let i = 0; i < 3; i++) expect((await h.dispute(subject, { event_id: events[i].event_id, reason: `r${i}` })).status).toBe(201);
    const fourth = await h.dispute(subject, { event_id: events[3].event_id, reason: 'r3' });
    expect(fourth.status).toBe(429);
    expect(fourth.body).toMatchObject({ error_code: 'DISPUTE_RATE_LIMITED', limit: 3 });
    const midnight = Math.floor(t.clock.now() / DAY) * DAY + DAY;
    expect(fourth.body.resets_at).toBe(new Date(midnight).toISOString());
    expect(fourth.headers['retry-after']).toBe(String(Math.ceil((midnight - t.clock.now()) / 1000)));
    // Another agent's count is its own.
    const other = await h.agent();
    const ev = await rated(h, other);
    expect((await h.dispute(other, { event_id: ev.event_id, reason: 'x' })).status).toBe(201);
    t.clock.set(midnight - 1);
    expect((await h.dispute(subject, { event_id: events[3].event_id, reason: 'r3' })).status).toBe(429);
    t.clock.set(midnight);
    expect((await h.dispute(subject, { event_id: events[3].event_id, reason: 'r3' })).status).toBe(201);
    expect((await h.dispute(subject, { event_id: events[4].event_id, reason: 'r4' })).status).toBe(201);
  });

  test('POST /admin/disputes/{id}/decision: 404, 422, 401 without the admin key', async () => {
    const subject = await h.agent();
    const ev = await rated(h, subject, { outcome: 'error' });
    const d = (await h.dispute(subject, { event_id: ev.event_id, reason: 'no' })).body.dispute_id as string;

    for (const id of [randomUUID(), 'not-a-uuid']) {
      const unknown = await h.decide(id, { decision: 'upheld' });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error_code).toBe('DISPUTE_NOT_FOUND');
    }
    for (const body of [{ decision: 'maybe' }, {}, { decision: 'upheld', note: 7 }]) {
      const bad = await h.decide(d, body);
      expect(bad.status).toBe(422);
      expect(bad.body.error_code).toBe('VALIDATION_FAILED');
    }
    for (const headers of [{}, { 'x-admin-key': 'wrong' }] as Record<string, string>[]) {
      const res = await h.decide(d, { decision: 'upheld' }, headers);
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('INVALID_ADMIN_KEY');
    }
    // An agent's own key is not an admin key.
    expect((await t.request('POST', `/admin/disputes/${d}/decision`, { token: subject.apiKey, body: { decision: 'upheld' } })).status).toBe(401);
    // None of these decided it: the dispute is still open and the event still counts.
    const row = await t.database.db.selectFrom('reputation_disputes').select(['status', 'decided_log_index']).where('dispute_id', '=', d).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'open', decided_log_index: null });
    expect((await h.passport(subject.agentId)).body.reputation).toMatchObject({ beta_beta: 1.5, signal_count: 1 });
    // The id is matched case-insensitively.
    const ok = await h.decide(d.toUpperCase(), { decision: 'upheld' });
    expect(ok.status).toBe(200);
    expect((await h.passport(subject.agentId)).body.reputation).toMatchObject({ beta_alpha: 1, beta_beta: 1, signal_count: 0, event_count: 1 });
  });
});
