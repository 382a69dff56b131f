/**
 * The public directory, GET /v1/agents, over HTTP on a real database: listed agents only, the row's
 * fields and nothing sensitive, the self-declared agent_type and domain of the description route, the
 * filters, the order (reputation, then age, never payment), limits, every refusal of a cursor
 * (forged, edited, truncated, for other filters, expired), synthetic founding profiles and the
 * community statistics, the refresh (decay re-rank, backfill, pruning), and the paging guarantee: a
 * walk of 250 listed agents while others register, list, unlist and get rated sees none twice and
 * skips none that stayed listed.
 *
 * One database for the file; each test scopes its view with a domain label of its own.
 */
import { createHmac, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/engines';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

const ADMIN = { 'x-admin-key': 'test-admin-key' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ROW_KEYS = [
  'a2a_agent_card_url', 'agent_card_url', 'agent_id', 'agent_name', 'agent_type', 'bio', 'bridge', 'did', 'domain', 'passport_url',
  'rank_score', 'registered_at', 'reputation_score', 'reputation_status', 'skills', 'synthetic', 'trust_summary',
];

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
}, 120_000);
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

let labels = 0;
/** A label of the test's own (domain or agent_type). */
const label = (prefix: string) => `${prefix}-${++labels}-${randomUUID().slice(0, 8)}`;

function on(t: TestApp) {
  const describeAs = (a: RegisteredAgent, body: Record<string, unknown>) =>
    t.request('POST', '/v1/agents/passport/description', { token: a.apiKey, body });
  /** A registered agent, described (listed unless told) one second after the previous one. */
  const listed = async (body: Record<string, unknown>, register: Record<string, unknown> = {}) => {
    t.clock.advance(1000);
    const a = await t.registerAgent(register);
    const r = await describeAs(a, { listed: true, ...body });
    expect(r.status, r.raw).toBe(200);
    return a;
  };
  const page = (query: Record<string, string | number | boolean> = {}) =>
    t.request('GET', `/v1/agents?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()}`);
  const ids = async (query: Record<string, string | number | boolean>) => {
    const r = await page(query);
    expect(r.status, r.raw).toBe(200);
    return r.body.agents.map((x: { agent_id: string }) => x.agent_id) as string[];
  };
  /** Every page of one walk. */
  const walk = async (query: Record<string, string | number | boolean>) => {
    const rows: any[] = [];
    let cursor: string | undefined;
    for (let n = 0; n < 1000; n++) {
      const r = await page({ ...query, ...(cursor ? { cursor } : {}) });
      expect(r.status, r.raw).toBe(200);
      rows.push(...r.body.agents);
      cursor = r.body.next_cursor ?? undefined;
      if (!cursor) return rows;
    }
    throw new Error('walk did not end');
  };
  let refs = 0;
  const rate = (rater: RegisteredAgent, subject: RegisteredAgent, outcome = 'approved') =>
    t.request('POST', '/v1/feedback/interaction', {
      token: rater.apiKey, body: { subject_agent_id: subject.agentId, ref_type: 'task', ref_id: `dir-${++refs}-${randomUUID()}`, outcome, category: 'accuracy' },
    });
  return { describeAs, listed, page, ids, walk, rate };
}

const refused = (r: { status: number; body: any }, reason?: string) => {
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.error_code).toBe('INVALID_DIRECTORY_CURSOR');
  expect(r.body.message).toMatch(/cursor/);
  if (reason) expect(r.body.reason).toBe(reason);
  expect(r.body.agents).toBeUndefined();
};

/** A cursor's parts: its JSON payload and MAC. */
const open = (cursor: string) => {
  const [body, mac] = cursor.split('.');
  return { payload: JSON.parse(Buffer.from(body, 'base64url').toString('utf8')), mac };
};
const seal = (payload: unknown, key: string) => {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${createHmac('sha256', key).update('svc.directory.cursor.v1\n').update(body).digest('base64url')}`;
};

describe('GET /v1/agents', () => {
  let t: TestApp;
  let h: ReturnType<typeof on>;
  beforeAll(async () => {
    t = await start();
    h = on(t);
  }, 120_000);
  afterAll(async () => t?.close());

  test('listed agents only, with their description, trust summary and reputation; no key, owner, PEM key or balance', async () => {
    const domain = label('happy');
    const owner = `secret-owner-${randomUUID()}@example.test`;
    const a = await h.listed({ bio: 'I answer questions about tax law.', skills: ['tax', 'law'], agent_type: 'assistant', domain }, { owner_identifier: owner });
    const b = await h.listed({ listed: false, bio: 'not listed', domain });
    const c = await h.listed({ domain, reputation_sub_signal_visibility: 'aggregate_only' });
    const voucher = await t.registerAgent();
    expect((await t.request('POST', `/v1/agents/${a.agentId}/vouch`, { token: voucher.apiKey, body: { skill: 'tax' } })).status).toBe(201);

    const r = await h.page({ domain });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'success', limit: 20, next_cursor: null });
    expect(r.body.agents.map((x: any) => x.agent_id)).toEqual([a.agentId, c.agentId]);
    const [ra, rc] = r.body.agents;
    const passport = (await t.request('GET', `/v1/agents/${a.agentId}/passport`)).body.passport;
    expect(ra).toEqual({
      agent_id: a.agentId, did: `did:svc:${a.agentId}`, agent_name: a.body.agent_name, synthetic: false,
      bio: 'I answer questions about tax law.', skills: ['tax', 'law'], agent_type: 'assistant', domain, bridge: false, agent_card_url: null,
      a2a_agent_card_url: expect.stringMatching(new RegExp(`/v1/agents/${a.agentId}/agent-card$`)),
      passport_url: expect.stringMatching(new RegExp(`/v1/agents/${a.agentId}/passport$`)),
      trust_summary: { trust_levels: ['floor'], custody_epoch: 1, vouch_count: 1 },
      reputation_score: 0.5, reputation_status: 'insufficient_data', rank_score: 0.5,
      reputation_sub_signals: { task_completion: null, accuracy: null, responsiveness: null },
      registered_at: passport.created_at,
    });
    // aggregate_only: no sub-signals.
    expect(Object.keys(rc).sort()).toEqual(ROW_KEYS);
    expect(Object.keys(ra).sort()).toEqual([...ROW_KEYS, 'reputation_sub_signals'].sort());
    // The passport agrees.
    expect(passport).toMatchObject({ agent_type: 'assistant', domain, listed: true });
    expect(passport.reputation.score).toBe(ra.reputation_score);
    // Nothing sensitive anywhere in the answer.
    for (const secret of [a.apiKey, c.apiKey, owner, 'BEGIN PUBLIC KEY', 'owner_identifier', 'api_key', 'private_key', 'public_key', 'balance', 'credits']) {
      expect(r.raw).not.toContain(secret);
    }
    expect(r.raw).not.toContain(b.agentId);
    // A public route: no key needed, any key ignored.
    expect((await t.request('GET', `/v1/agents?domain=${domain}`, { token: 'svc_not-a-key' })).status).toBe(200);
  });

  test('description: agent_type and domain are validated lowercase labels, shown on the passport; null clears them', async () => {
    const a = await t.registerAgent();
    for (const body of [
      { agent_type: 'Assistant' }, { agent_type: 'two words' }, { agent_type: 'x'.repeat(33) }, { agent_type: '' }, { agent_type: 5 },
      { domain: '-finance' }, { domain: 'Finance' }, { domain: 'd'.repeat(65) }, { domain: 'a/b' }, { domain: ['x'] },
    ]) {
      const r = await h.describeAs(a, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error_code).toBe('VALIDATION_FAILED');
      expect(r.body.field).toBe(`body.${Object.keys(body)[0]}`);
    }
    const domain = label('desc');
    expect((await h.describeAs(a, { listed: true, agent_type: 'research_bot-2', domain })).status).toBe(200);
    expect(await h.ids({ domain, agent_type: 'research_bot-2' })).toEqual([a.agentId]);
    const cleared = await h.describeAs(a, { agent_type: null });
    expect(cleared.body.passport).toMatchObject({ agent_type: null, domain });
    expect(await h.ids({ domain, agent_type: 'research_bot-2' })).toEqual([]);
    expect(await h.ids({ domain })).toEqual([a.agentId]);
    // Without a key, the description route answers 401.
    expect((await t.request('POST', '/v1/agents/passport/description', { body: { domain } })).body.error_code).toBe('INVALID_API_KEY');
  });

  test('filters: agent_type, domain, bridge_only (an external agent_card_url), alone and together; bad values are 422', async () => {
    const domain = label('filters');
    const type = label('type');
    const x1 = await h.listed({ domain, agent_type: type });
    const x2 = await h.listed({ domain, agent_type: 'coding' });
    const x3 = await h.listed({ domain, agent_type: type }, { agent_card_url: 'https://cards.example.com/x3.json' });
    expect(await h.ids({ domain })).toEqual([x1.agentId, x2.agentId, x3.agentId]);
    expect(await h.ids({ agent_type: type })).toEqual([x1.agentId, x3.agentId]);
    expect(await h.ids({ domain, agent_type: type })).toEqual([x1.agentId, x3.agentId]);
    expect(await h.ids({ domain, agent_type: 'coding' })).toEqual([x2.agentId]);
    expect(await h.ids({ domain, bridge_only: true })).toEqual([x3.agentId]);
    expect(await h.ids({ domain, bridge_only: false })).toEqual([x1.agentId, x2.agentId, x3.agentId]);
    expect(await h.ids({ agent_type: type, bridge_only: true })).toEqual([x3.agentId]);
    expect(await h.ids({ domain, agent_type: 'nobody' })).toEqual([]);
    const bridge = (await h.page({ domain, bridge_only: true })).body.agents[0];
    expect(bridge).toMatchObject({ bridge: true, agent_card_url: 'https://cards.example.com/x3.json' });
    expect((await h.ids({ bridge_only: true }))).toContain(x3.agentId);
    const bad: Record<string, string>[] = [{ agent_type: 'UPPER' }, { domain: 'has space' }, { bridge_only: 'maybe' }, { agent_type: 'x'.repeat(33) }, { domain: '' }];
    for (const q of bad) {
      const r = await h.page(q);
      expect(r.status, JSON.stringify(q)).toBe(422);
      expect(r.body.error_code).toBe('VALIDATION_FAILED');
      expect(r.body.field).toBe(`querystring.${Object.keys(q)[0]}`);
    }
  });

  test('order: best reputation first, then oldest, then agent_id; a rating moves an agent at once; never by payment', async () => {
    const domain = label('order');
    const raters = await Promise.all([1, 2, 3, 4, 5].map(() => t.registerAgent()));
    const q = await h.listed({ domain });
    const r = await h.listed({ domain });
    const p = await h.listed({ domain });
    const s = await h.listed({ domain });
    for (const x of raters.slice(0, 3)) expect((await h.rate(x, p)).status).toBe(201);
    for (const x of raters.slice(0, 2)) expect((await h.rate(x, r, 'error')).status).toBe(201);
    // s pays: a paying tier and purchased credit change nothing.
    await t.database.db.updateTable('agents').set({ tier: 'pro' }).where('agent_id', '=', s.agentId).execute();
    const rows = (await h.page({ domain })).body.agents;
    expect(rows.map((x: any) => x.agent_id)).toEqual([p.agentId, q.agentId, s.agentId, r.agentId]);
    for (const x of rows) expect(x.rank_score).toBe(x.reputation_score);
    expect(rows[0].reputation_score).toBeGreaterThan(0.5);
    expect(rows[3].reputation_score).toBeLessThan(0.5);
    for (const x of [...raters, ...raters]) expect((await h.rate(x, r)).status).toBe(201);
    const after = (await h.page({ domain })).body.agents;
    expect(after.map((x: any) => x.agent_id)).toEqual([r.agentId, p.agentId, q.agentId, s.agentId]);
    expect(after[0].rank_score).toBe(after[0].reputation_score);
    // Same score and age: agent_id decides.
    const twins = [await t.registerAgent(), await t.registerAgent()];
    const twin = label('twins');
    for (const x of twins) expect((await h.describeAs(x, { listed: true, domain: twin })).status).toBe(200);
    expect(await h.ids({ domain: twin })).toEqual(twins.map((x) => x.agentId).sort());
  });

  test('reputation figures in a row equal the passport\'s: score, status and sub-signals (without their credible intervals), also when the 90-day window starts inside the day of the ratings', async () => {
    const domain = label('figures');
    const raters = await Promise.all([1, 2, 3, 4].map(() => t.registerAgent()));
    const a = await h.listed({ domain });
    const b = await h.listed({ domain, reputation_sub_signal_visibility: 'aggregate_only' });
    for (const x of raters) {
      expect((await h.rate(x, a)).status).toBe(201);
      expect((await h.rate(x, b, 'error')).status).toBe(201);
    }
    const compare = async () => {
      const rows = (await h.page({ domain })).body.agents;
      for (const agent of [a, b]) {
        const row = rows.find((x: any) => x.agent_id === agent.agentId);
        const p = (await t.request('GET', `/v1/agents/${agent.agentId}/passport`)).body.passport;
        expect(row.reputation_score).toBe(p.reputation.score);
        expect(row.reputation_status).toBe(p.reputation.status);
        // The row's sub-signals are the passport's without the credible intervals.
        const withoutIntervals = p.reputation_sub_signals === undefined ? undefined
          : Object.fromEntries(Object.entries(p.reputation_sub_signals).map(([k, v]: [string, any]) => [k, v === null ? null : (({ confidence_interval: _ci, ...rest }) => rest)(v)]));
        expect(row.reputation_sub_signals).toEqual(withoutIntervals);
        if (p.reputation_sub_signals?.accuracy) expect(p.reputation_sub_signals.accuracy.confidence_interval).toHaveLength(2);
      }
      return rows;
    };
    const rows = await compare();
    expect(rows[0].reputation_sub_signals.accuracy).toMatchObject({ interaction_count: 4 });
    expect(rows[0].reputation_status).toBe('scored');
    expect(rows[1].reputation_sub_signals).toBeUndefined();
    // Almost 90 days on: the window starts on the ratings' day, a few hours before them.
    const ratedAt = t.clock.now();
    const windowStart = Math.floor(ratedAt / 86_400_000) * 86_400_000 + 60_000;
    t.clock.set(windowStart + 90 * 86_400_000);
    expect((await compare())[0].reputation_sub_signals.accuracy).toMatchObject({ interaction_count: 4 });
    t.clock.advance(ratedAt - windowStart + 1000);
    expect((await compare()).find((x: any) => x.agent_id === a.agentId).reputation_sub_signals.accuracy).toBeNull();
  });

  test('a custody transfer starts the reputation afresh, and the rank with it, in the transfer\'s transaction', async () => {
    const domain = label('custody');
    const raters = await Promise.all([1, 2, 3].map(() => t.registerAgent()));
    const a = await h.listed({ domain });
    for (const x of raters) expect((await h.rate(x, a)).status).toBe(201);
    const before = (await h.page({ domain })).body.agents[0];
    expect(before.rank_score).toBeGreaterThan(0.5);
    const incoming = generateKeyPairSync('ed25519');
    const intent = await t.request('POST', '/v1/me/custody/transfer/intent', {
      token: a.apiKey, body: { incoming_public_key: incoming.publicKey.export({ format: 'pem', type: 'spki' }).toString(), incoming_owner_identifier: `next-${randomUUID()}@example.test` },
    });
    expect(intent.status, intent.raw).toBe(201);
    const signature = sign(null, Buffer.from(intent.body.sign_payload, 'utf8'), a.privateKeyPem).toString('base64');
    const done = await t.request('POST', '/v1/me/custody/transfer/complete', { token: a.apiKey, body: { transfer_id: intent.body.transfer_id, passport_signature: signature } });
    expect(done.status, done.raw).toBe(200);
    const after = (await h.page({ domain })).body.agents[0];
    expect(after).toMatchObject({ agent_id: a.agentId, rank_score: 0.5, reputation_score: 0.5, reputation_status: 'insufficient_data', trust_summary: { custody_epoch: 2 } });
  });

  test('limit is 1 to 100, default 20; out of range is 422; pages follow next_cursor to the end', async () => {
    const domain = label('limits');
    const made: string[] = [];
    for (let i = 0; i < 23; i++) made.push((await h.listed({ domain })).agentId);
    const first = await h.page({ domain });
    expect(first.body.agents).toHaveLength(20);
    expect(first.body.limit).toBe(20);
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await h.page({ domain, cursor: first.body.next_cursor });
    expect(second.body.agents).toHaveLength(3);
    expect(second.body.next_cursor).toBeNull();
    expect([...first.body.agents, ...second.body.agents].map((x: any) => x.agent_id)).toEqual(made);
    expect(await h.ids({ domain, limit: 1 })).toEqual([made[0]]);
    expect(await h.ids({ domain, limit: 100 })).toEqual(made);
    expect((await h.walk({ domain, limit: 4 })).map((x) => x.agent_id)).toEqual(made);
    for (const limit of ['0', '101', '-1', '1.5', 'abc', '']) {
      const r = await t.request('GET', `/v1/agents?domain=${domain}&limit=${limit}`);
      expect(r.status, limit).toBe(422);
      expect(r.body).toMatchObject({ error_code: 'VALIDATION_FAILED', field: 'querystring.limit' });
    }
  });

  test('a cursor svc did not hand out for this walk is 400 INVALID_DIRECTORY_CURSOR: garbage, truncated, edited, forged, other filters, expired', async () => {
    const domain = label('cursor');
    for (let i = 0; i < 6; i++) await h.listed({ domain });
    const first = await h.page({ domain, limit: 2 });
    const cursor: string = first.body.next_cursor;
    expect((await h.page({ domain, limit: 2, cursor })).status).toBe(200);
    // Any limit may follow.
    expect((await h.page({ domain, limit: 3, cursor })).body.agents).toHaveLength(3);

    refused(await h.page({ domain, cursor: 'garbage' }), 'malformed');
    refused(await h.page({ domain, cursor: 'a.b.c' }), 'malformed');
    refused(await h.page({ domain, cursor: cursor.slice(0, -1) }), 'malformed');
    refused(await h.page({ domain, cursor: cursor.slice(0, 30) }), 'malformed');
    refused(await h.page({ domain, cursor: cursor.split('.')[0] }), 'malformed');
    refused(await t.request('GET', `/v1/agents?domain=${domain}&cursor=`));
    refused(await h.page({ domain, cursor: 'x'.repeat(600) }));
    // Edited: the payload says another row or version, the MAC is the original's.
    const { payload, mac } = open(cursor);
    for (const edit of [{ ...payload, k: [0, 0, payload.k[2]] }, { ...payload, s: payload.s + 1 }, { ...payload, t: payload.t + 3_600_000 }, { ...payload, f: [null, null, 0] }]) {
      refused(await h.page({ domain, cursor: `${Buffer.from(JSON.stringify(edit)).toString('base64url')}.${mac}` }), 'signature');
    }
    // One MAC character changed.
    const flipped = cursor.slice(0, -2) + (cursor.at(-2) === 'A' ? 'B' : 'A') + cursor.at(-1);
    refused(await h.page({ domain, cursor: flipped }), 'signature');
    // Forged with another key.
    refused(await h.page({ domain, cursor: seal(payload, 'not-the-directory-key-0123456789abcdef') }), 'signature');
    // Made with the directory's own key (read behind the service) but not a cursor's shape: still refused.
    const key = (await t.database.db.selectFrom('directory_state').select('cursor_secret').executeTakeFirstOrThrow()).cursor_secret;
    expect((await h.page({ domain, cursor: seal(payload, key) })).status).toBe(200);
    for (const bad of [{ ...payload, v: 2 }, { ...payload, k: [0, 0, 'not-a-uuid'] }, { ...payload, s: -1 }, { ...payload, f: ['x'] }, [1, 2]]) {
      refused(await h.page({ domain, cursor: seal(bad, key) }), 'malformed');
    }
    // The walk's filters only.
    refused(await h.page({ cursor }), 'filters');
    refused(await h.page({ domain, agent_type: 'assistant', cursor }), 'filters');
    refused(await h.page({ domain, bridge_only: true, cursor }), 'filters');
    // A walk lasts SVC_DIRECTORY_CURSOR_TTL_SECONDS (3600 s) from its first page.
    t.clock.advance(3_601_000);
    refused(await h.page({ domain, cursor }), 'expired');
    expect((await h.page({ domain, limit: 2 })).status).toBe(200);
  });

  test('an agent that unlists or whose passport is revoked leaves the directory, also from a walk under way; relisting brings it back', async () => {
    const domain = label('leave');
    const a = await h.listed({ domain });
    const b = await h.listed({ domain });
    const c = await h.listed({ domain });
    const first = await h.page({ domain, limit: 1 });
    expect(first.body.agents[0].agent_id).toBe(a.agentId);
    expect((await h.describeAs(b, { listed: false })).status).toBe(200);
    const rest = await h.page({ domain, limit: 5, cursor: first.body.next_cursor });
    expect(rest.body.agents.map((x: any) => x.agent_id)).toEqual([c.agentId]);
    expect(await h.ids({ domain })).toEqual([a.agentId, c.agentId]);
    expect((await h.describeAs(b, { listed: true })).status).toBe(200);
    expect(await h.ids({ domain })).toEqual([a.agentId, b.agentId, c.agentId]);
    const revoke = await t.request('POST', '/v1/me/passport/revoke', { token: c.apiKey });
    expect(revoke.status).toBe(200);
    expect(await h.ids({ domain })).toEqual([a.agentId, b.agentId]);
    expect((await h.describeAs(c, { listed: true })).body.error_code).toBe('PASSPORT_REVOKED');
    expect(await h.ids({ domain })).toEqual([a.agentId, b.agentId]);
  });

  test('paging: 250 listed agents walked while others register, list, unlist and get rated: none seen twice, none skipped that stayed listed', async () => {
    const domain = label('walk');
    const raters = await Promise.all([1, 2, 3, 4, 5, 6].map(() => t.registerAgent()));
    let turn = 0;
    const rater = () => raters[turn++ % raters.length];
    const original: RegisteredAgent[] = [];
    for (let i = 0; i < 250; i++) original.push(await h.listed({ domain }));
    // Varied reputations before the walk.
    for (let i = 0; i < 250; i += 9) expect((await h.rate(rater(), original[i], i % 2 ? 'approved' : 'error')).status).toBe(201);

    /** Agents that unlisted during the walk, with how many rows had been seen then. */
    const unlisted = new Map<string, number>();
    const joined = new Set<string>();
    const seen: any[] = [];
    let cursor: string | undefined;
    for (let n = 0; ; n++) {
      const r = await h.page({ domain, limit: 9, ...(cursor ? { cursor } : {}) });
      expect(r.status, r.raw).toBe(200);
      seen.push(...r.body.agents);
      cursor = r.body.next_cursor ?? undefined;
      if (!cursor) break;
      // Meanwhile: new agents list, one rated high at once (it would sort before the cursor), one low.
      const high = await h.listed({ domain });
      for (let k = 0; k < 3; k++) expect((await h.rate(rater(), high)).status).toBe(201);
      const low = await h.listed({ domain });
      expect((await h.rate(rater(), low, 'error')).status).toBe(201);
      joined.add(high.agentId).add(low.agentId);
      // Agents already walked and agents still ahead get rated up and down.
      const behind = original[(n * 37) % 250];
      const ahead = original[(n * 53 + 101) % 250];
      expect((await h.rate(rater(), behind)).status).toBe(201);
      expect((await h.rate(rater(), ahead, 'error')).status).toBe(201);
      // Every fourth page one agent unlists.
      if (n % 4 === 1) {
        const gone = original[(n * 29 + 7) % 250];
        if (!unlisted.has(gone.agentId) && (await h.describeAs(gone, { listed: false })).status === 200) unlisted.set(gone.agentId, seen.length);
      }
      t.clock.advance(1000);
    }
    const ids = seen.map((x) => x.agent_id);
    expect(new Set(ids).size).toBe(ids.length);
    const stayed = original.map((a) => a.agentId).filter((id) => !unlisted.has(id));
    const got = new Set(ids);
    expect(stayed.filter((id) => !got.has(id))).toEqual([]);
    expect(ids.filter((id) => joined.has(id))).toEqual([]);
    // An agent that unlisted is not seen after it did.
    expect(ids.filter((id, i) => unlisted.has(id) && i >= (unlisted.get(id) as number))).toEqual([]);
    expect(unlisted.size).toBeGreaterThan(3);
    // The walk read one version: its rank order never goes backwards.
    for (let i = 1; i < seen.length; i++) {
      const [x, y] = [seen[i - 1], seen[i]];
      const ok = x.rank_score > y.rank_score || (x.rank_score === y.rank_score
        && (x.registered_at < y.registered_at || (x.registered_at === y.registered_at && x.agent_id < y.agent_id)));
      expect(ok, `${i}: ${JSON.stringify([x.rank_score, x.registered_at, x.agent_id])} before ${JSON.stringify([y.rank_score, y.registered_at, y.agent_id])}`).toBe(true);
    }
    // A new walk sees the new agents and the new order.
    const fresh = (await h.walk({ domain, limit: 100 })).map((x) => x.agent_id);
    expect(fresh).toHaveLength(stayed.length + joined.size);
    expect(fresh.slice(0, 5).some((id) => joined.has(id))).toBe(true);
  }, 600_000);

  test('descriptions, ratings, revocations and walks at the same time: one current row per agent, the answers agree with the final state', async () => {
    const domain = label('race');
    const raters = await Promise.all([1, 2, 3, 4].map(() => t.registerAgent()));
    const agents = [];
    for (let i = 0; i < 12; i++) agents.push(await h.listed({ domain }));
    const ops: Promise<unknown>[] = [];
    for (let round = 0; round < 4; round++) {
      agents.forEach((a, i) => {
        ops.push(h.describeAs(a, { listed: (i + round) % 3 !== 0, bio: `round ${round}` }));
        ops.push(h.rate(raters[(i + round) % raters.length], a, (i + round) % 2 ? 'approved' : 'error'));
        if (round === 3 && i % 5 === 0) ops.push(t.request('POST', '/v1/me/passport/revoke', { token: a.apiKey }));
        ops.push(h.page({ domain, limit: 5 }));
      });
    }
    const results = (await Promise.all(ops)) as { status: number; raw: string }[];
    for (const r of results) expect([200, 201, 403, 409], r.raw).toContain(r.status);
    const current = await t.database.db.selectFrom('directory_ranks').select(['agent_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('valid_to', 'is', null).where('agent_id', 'in', agents.map((a) => a.agentId)).groupBy('agent_id').execute();
    for (const c of current) expect(Number(c.n)).toBe(1);
    // The directory shows exactly the agents whose passport says listed and is not revoked, with their last bio and score.
    const passports = await t.database.db.selectFrom('passports').select(['agent_id', 'listed', 'revoked_at', 'bio']).where('agent_id', 'in', agents.map((a) => a.agentId)).execute();
    const expected = passports.filter((p) => Number(p.listed) === 1 && p.revoked_at === null).map((p) => p.agent_id).sort();
    const rows = await h.walk({ domain, limit: 7 });
    expect(rows.map((x) => x.agent_id).sort()).toEqual(expected);
    expect(current.map((c) => c.agent_id).sort()).toEqual(expected);
    for (const row of rows) {
      expect(row.bio).toBe(passports.find((p) => p.agent_id === row.agent_id)?.bio);
      expect(row.rank_score).toBe(row.reputation_score);
    }
  }, 120_000);

  test('the trust log parity check stays clean', async () => {
    const r = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, mismatch_count: 0 });
  }, 120_000);
});

describe('synthetic founding profiles', () => {
  const domain = label('founding');
  const profiles = [
    { key: 'librarian', agent_name: 'svc-librarian', bio: 'Finds papers.', skills: ['search'], agent_type: 'research', domain },
    { key: 'scribe', agent_name: 'svc-scribe', domain, agent_card_url: 'https://cards.example.com/scribe.json', created_at: '2026-01-01T00:00:00Z' },
  ];
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-synthetic-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('shown with synthetic: true, no passport, no reputation; counted apart in the community statistics; the configuration is followed at each start', async () => {
    const t = await start({ SVC_DIRECTORY_SYNTHETIC_PROFILES: JSON.stringify(profiles) });
    try {
      const h = on(t);
      const real = await h.listed({ domain });
      const rows = (await h.page({ domain })).body.agents;
      expect(rows.map((x: any) => [x.agent_name, x.synthetic])).toEqual([['svc-scribe', true], ['svc-librarian', true], [real.body.agent_name, false]]);
      const [scribe, librarian] = rows;
      expect(librarian).toEqual({
        agent_id: expect.stringMatching(UUID), did: null, agent_name: 'svc-librarian', synthetic: true, bio: 'Finds papers.', skills: ['search'],
        agent_type: 'research', domain, bridge: false, agent_card_url: null, a2a_agent_card_url: null, passport_url: null,
        trust_summary: { trust_levels: [], custody_epoch: null, vouch_count: 0 }, reputation_score: null, reputation_status: 'synthetic',
        rank_score: 0.5, registered_at: librarian.registered_at,
      });
      expect(librarian.agent_id[14]).toBe('8');
      expect(scribe).toMatchObject({ bridge: true, agent_card_url: 'https://cards.example.com/scribe.json', registered_at: '2026-01-01T00:00:00.000Z' });
      expect(await h.ids({ bridge_only: true, domain })).toEqual([scribe.agent_id]);
      expect(await h.ids({ agent_type: 'research', domain })).toEqual([librarian.agent_id]);
      // Not an agent: no passport.
      expect((await t.request('GET', `/v1/agents/${librarian.agent_id}/passport`)).status).toBe(404);
      const community = (await t.request('GET', '/v1/community')).body;
      expect(community.directory_synthetic_profiles).toBe(2);
      const listedAgents = Number((await t.database.db.selectFrom('passports').select((eb) => eb.fn.countAll<number>().as('n')).where('listed', '=', 1).executeTakeFirstOrThrow()).n);
      expect(community.directory_listed).toBe(listedAgents);
      const ids = { librarian: librarian.agent_id, scribe: scribe.agent_id };

      // Restart on the same database with a file holding one changed profile: the other leaves.
      await t.close();
      const file = join(dir, 'profiles.json');
      writeFileSync(file, JSON.stringify([{ ...profiles[0], bio: 'Finds papers and data sets.' }]));
      const t2 = await start({ SVC_DIRECTORY_SYNTHETIC_PROFILES: file });
      try {
        const rows2 = (await on(t2).page({ domain })).body.agents;
        expect(rows2.map((x: any) => [x.agent_id, x.bio])).toEqual([[ids.librarian, 'Finds papers and data sets.'], [real.agentId, null]]);
        expect((await t2.request('GET', '/v1/community')).body.directory_synthetic_profiles).toBe(1);
      } finally {
        await t2.close();
      }
      // Unset: none.
      const t3 = await start();
      try {
        expect(await on(t3).ids({ domain })).toEqual([real.agentId]);
        expect((await t3.request('GET', '/v1/community')).body.directory_synthetic_profiles).toBe(0);
      } finally {
        await t3.close();
      }
    } finally {
      await t.close().catch(() => undefined);
    }
  }, 120_000);

  test('a bad configuration stops the start with every problem named', async () => {
    await expect(start({ SVC_DIRECTORY_SYNTHETIC_PROFILES: '[{"key": "x",' })).rejects.toThrow(/SVC_DIRECTORY_SYNTHETIC_PROFILES: not valid JSON/);
    await expect(start({ SVC_DIRECTORY_SYNTHETIC_PROFILES: '{"key": "x"}' })).rejects.toThrow(/path of a JSON file|cannot read/);
    await expect(start({ SVC_DIRECTORY_SYNTHETIC_PROFILES: join(dir, 'missing.json') })).rejects.toThrow(/cannot read the file/);
    const bad = [
      { key: 'ok', agent_name: 'has space' },
      { key: 'ok', agent_name: 'dup', bio: 'caf\u00e9' },
      { key: 'URL', agent_name: 'u', agent_card_url: 'http://cards.example.com/x.json', created_at: 'yesterday' },
      { key: 'extra', agent_name: 'e', owner_identifier: 'x' },
    ];
    const err = await start({ SVC_DIRECTORY_SYNTHETIC_PROFILES: JSON.stringify(bad) }).then(() => undefined, (e: Error) => e);
    expect(err?.message).toMatch(/\[0\]\/agent_name/);
    expect(err?.message).toMatch(/\[1\]\/bio/);
    expect(err?.message).toMatch(/\[2\]\/key/);
    expect(err?.message).toMatch(/\[3\].*additional properties/);
  }, 120_000);
});

describe('refresh', () => {
  test('re-ranks as reputation decays, lists agents listed behind the service, deletes versions no walk can read', async () => {
    const t = await start({ SVC_DIRECTORY_REFRESH_SECONDS: '1' });
    try {
      const h = on(t);
      const domain = label('refresh');
      const raters = await Promise.all([1, 2, 3, 4].map(() => t.registerAgent()));
      const p = await h.listed({ domain });
      const q = await h.listed({ domain });
      for (const x of raters) expect((await h.rate(x, p)).status).toBe(201);
      const before = (await h.page({ domain })).body.agents;
      expect(before.map((x: any) => x.agent_id)).toEqual([p.agentId, q.agentId]);
      const was = before[0].rank_score;
      expect(was).toBe(before[0].reputation_score);

      // 120 days later the score has decayed towards 0.5; the next refresh re-ranks it.
      t.clock.advanceDays(120);
      const decayed = async () => (await h.page({ domain })).body.agents[0];
      await expect.poll(async () => (await decayed()).rank_score, { timeout: 10_000, interval: 200 }).toBeLessThan(was - 0.01);
      const now = await decayed();
      expect(Math.abs(now.rank_score - now.reputation_score)).toBeLessThan(0.0001);

      // A passport listed behind the service's back is taken in by the refresh.
      const hidden = await t.registerAgent();
      await t.database.db.updateTable('passports').set({ listed: 1, domain }).where('agent_id', '=', hidden.agentId).execute();
      await expect.poll(() => h.ids({ domain }), { timeout: 10_000, interval: 200 }).toContain(hidden.agentId);
      // ... and one unlisted behind its back leaves: at once from the answers, from the rank rows at the next refresh.
      await t.database.db.updateTable('passports').set({ listed: 0 }).where('agent_id', '=', q.agentId).execute();
      expect(await h.ids({ domain })).not.toContain(q.agentId);
      const current = async (id: string) => (await t.database.db.selectFrom('directory_ranks').select('agent_id').where('agent_id', '=', id).where('valid_to', 'is', null).execute()).length;
      await expect.poll(() => current(q.agentId), { timeout: 10_000, interval: 200 }).toBe(0);

      // Closed versions older than the cursor lifetime (and a grace) are deleted.
      const closed = () => t.database.db.selectFrom('directory_ranks').select('agent_id').where('closed_at', 'is not', null)
        .where('agent_id', 'in', [p.agentId, q.agentId]).execute();
      expect((await closed()).length).toBeGreaterThan(0);
      t.clock.advance(2 * 3_600_000);
      await expect.poll(async () => (await closed()).length, { timeout: 10_000, interval: 200 }).toBe(0);
      expect(await h.ids({ domain })).toEqual([p.agentId, hidden.agentId]);
    } finally {
      await t.close();
    }
  }, 120_000);
});
