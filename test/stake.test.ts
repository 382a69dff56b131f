/**
 * Stake, sponsorship and slashing over HTTP: every route, every error code, security, the 30-day
 * lock and 7-day cooling and revoke grace on the injected clock, rings, the slash split to the unit,
 * the money in the credit ledger (the snapshot, `_svc.usage`, the ledger balance), the trust log
 * entries, the decision trace and a clean parity check.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { billingModuleFor } from '../src/modules/billing/module';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

const DAY = 86_400_000;
const admin = { 'x-admin-key': 'test-admin-key' };
let t: TestApp;
let ref = 0;

/** Non-expiring credit (or expiring after `days`) granted through the admin route. */
async function grant(agentId: string, credits: number, days?: number) {
  const r = await t.request('POST', '/admin/billing/grants', {
    headers: admin, body: { agent_id: agentId, credits, reference: `stake-test-${++ref}`, ...(days ? { expires_in_days: days } : {}) },
  });
  expect(r.status).toBe(200);
}
const stake = (a: { apiKey: string }, tier: unknown) => t.request('POST', '/v1/agents/passport/stake', { token: a.apiKey, body: { tier } });
const unstake = (a: { apiKey: string }, body?: unknown) => t.request('POST', '/v1/agents/passport/unstake', { token: a.apiKey, ...(body === undefined ? {} : { body }) });
const sponsor = (by: { apiKey: string }, sponsorId: string, wardId: string, revoke = false) =>
  t.request('POST', `/v1/agents/${sponsorId}/sponsor/${wardId}${revoke ? '/revoke' : ''}`, { token: by.apiKey });
const slash = (agentId: string, body: unknown, headers: Record<string, string> = admin) => t.request('POST', `/admin/agents/${agentId}/slash`, { headers, body });
const billing = async (a: { apiKey: string }) => (await t.request('GET', '/v1/billing', { token: a.apiKey })).body;
const levels = async (a: { apiKey: string }) => (await t.request('GET', '/v1/me', { token: a.apiKey })).body.trust_levels as string[];
const logEntry = async (index: number) => (await t.request('GET', `/v1/trust/log/entries?start=${index}&end=${index + 1}`)).body.entries[0].entry;
const advance = (ms: number) => t.clock.advance(ms);

async function staked(credits: number, tier = 'low', overrides: Record<string, unknown> = {}): Promise<RegisteredAgent> {
  const a = await t.registerAgent(overrides);
  await grant(a.agentId, credits);
  expect((await stake(a, tier)).status).toBe(201);
  return a;
}

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('stake', () => {
  test('low locks 1,000 credits out of the spendable balance in one transaction with its log entry; staked level, snapshot and _svc.usage show it apart', async () => {
    const a = await t.registerAgent();
    await grant(a.agentId, 1500);
    expect(await levels(a)).not.toContain('staked');
    const r = await stake(a, 'low');
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ status: 'success', duplicate: false, credits_locked_now_usd: '10.0000', stake: { tier: 'low', status: 'active', credits_staked_usd: '10.0000', cooling_until: null } });
    expect(Date.parse(r.body.stake.locked_until) - Date.parse(r.body.stake.staked_at)).toBe(30 * DAY);
    expect(await levels(a)).toContain('staked');
    expect((await t.request('GET', `/v1/agents/${a.agentId}/passport`)).body.passport.trust_levels).toContain('staked');
    const b = await billing(a);
    expect(b).toMatchObject({ credits_remaining_usd: '5.0000', credits_staked_usd: '10.0000' });
    // GET /v1/usage agrees with GET /v1/billing.
    expect((await t.request('GET', '/v1/usage', { token: a.apiKey })).body).toMatchObject({ credits_remaining_usd: '5.0000', credits_staked_usd: '10.0000' });
    // A metered call's _svc.usage shows staked credit apart from spendable credit.
    const put = await t.request('PUT', '/v1/memory/k1', { token: a.apiKey, body: { value: 1 } });
    expect(put.body._svc.usage).toMatchObject({ credits_remaining_usd: '5.0000', credits_staked_usd: '10.0000' });
    // The ledger: the agent's rows add up to its spendable balance; the stake is a lot of its stake account.
    const m = billingModuleFor(t.config)!;
    expect(await m.credits.ledgerBalance(a.agentId)).toBe(50_000);
    const rows = await t.database.db.selectFrom('credit_ledger').select(['agent_id', 'kind', 'amount_units', 'lot_id']).where('kind', '=', 'stake').where('agent_id', 'in', [a.agentId, `stake:${a.agentId}`]).execute();
    expect(rows.reduce((n, x) => n + Number(x.amount_units), 0)).toBe(0);
    expect(rows.find((x) => x.agent_id === `stake:${a.agentId}`)).toMatchObject({ amount_units: expect.anything(), lot_id: r.body.stake.stake_id });
    expect(await logEntry(r.body.stake.log_index)).toMatchObject({ kind: 'stake.locked', agent_id: a.agentId, data: { stake_id: r.body.stake.stake_id, tier: 'low', units_added: 100_000, units_total: 100_000 } });
  });

  test('a repeat answers the stake held; a higher tier locks the difference and restarts the lock; a lower tier is refused', async () => {
    const a = await staked(12_000);
    const first = (await billing(a));
    expect(first.credits_staked_usd).toBe('10.0000');
    const again = await stake(a, 'low');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true, credits_locked_now_usd: '0.0000' });
    advance(10 * DAY);
    const up = await stake(a, 'medium');
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ duplicate: false, credits_locked_now_usd: '90.0000', stake: { tier: 'medium', credits_staked_usd: '100.0000', stake_id: again.body.stake.stake_id } });
    expect(Date.parse(up.body.stake.locked_until)).toBe(t.clock.now() + 30 * DAY);
    expect(await billing(a)).toMatchObject({ credits_remaining_usd: '20.0000', credits_staked_usd: '100.0000' });
    const down = await stake(a, 'low');
    expect(down.status).toBe(409);
    expect(down.body).toMatchObject({ error_code: 'STAKE_TIER_LOWER', current_tier: 'medium' });
  });

  test('402 INSUFFICIENT_CREDITS with upgrade_url when short, and granted credit with an expiry is not stakeable; nothing moves', async () => {
    const a = await t.registerAgent();
    const none = await stake(a, 'low');
    expect(none.status).toBe(402);
    expect(none.body).toMatchObject({ error_code: 'INSUFFICIENT_CREDITS', stakeable_usd: '0.0000', required_usd: '10.0000' });
    expect(none.body.upgrade_url).toMatch(/billing/);
    await grant(a.agentId, 5000, 365);
    await grant(a.agentId, 999);
    const short = await stake(a, 'low');
    expect(short.status).toBe(402);
    expect(short.body.stakeable_usd).toBe('9.9900');
    expect(await billing(a)).toMatchObject({ credits_remaining_usd: '59.9900', credits_staked_usd: '0.0000' });
    expect(await levels(a)).not.toContain('staked');
  });

  test('bad input and security: 422 STAKE_TIER_INVALID, 401 without or with a wrong key, 403 for a scoped key, 403 PASSPORT_REVOKED', async () => {
    const a = await t.registerAgent();
    for (const tier of ['huge', 3, null]) {
      const r = await stake(a, tier);
      expect(r.status).toBe(422);
      expect(r.body.error_code).toBe('STAKE_TIER_INVALID');
    }
    expect((await t.request('POST', '/v1/agents/passport/stake', { body: { tier: 'low' } })).body.error_code).toBe('INVALID_API_KEY');
    expect((await t.request('POST', '/v1/agents/passport/stake', { token: 'svc_wrong', body: { tier: 'low' } })).status).toBe(401);
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory'] } })).body.api_key as string;
    for (const [path, body] of [['/v1/agents/passport/stake', { tier: 'low' }], ['/v1/agents/passport/unstake', {}], [`/v1/agents/${a.agentId}/sponsor/${a.agentId}`, {}]] as const) {
      const r = await t.request('POST', path, { token: scoped, body });
      expect(r.status, path).toBe(403);
      expect(r.body.error_code).toBe('SCOPE_NOT_GRANTED');
    }
    await grant(a.agentId, 2000);
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: a.apiKey })).status).toBe(200);
    const revoked = await stake(a, 'low');
    expect(revoked.status).toBe(403);
    expect(revoked.body.error_code).toBe('PASSPORT_REVOKED');
  });
});

describe('unstake', () => {
  test('refused while locked (to the millisecond), then 7 days of cooling out of `staked`, then the credit returns once', async () => {
    const a = await staked(1_200);
    const at = Date.parse((await stake(a, 'low')).body.stake.locked_until);
    expect((await unstake(a)).body.error_code).toBe('STAKE_LOCKED');
    t.clock.set(at - 1);
    const locked = await unstake(a);
    expect(locked.status).toBe(409);
    expect(locked.body).toMatchObject({ error_code: 'STAKE_LOCKED', locked_until: new Date(at).toISOString() });
    t.clock.set(at);
    const r = await unstake(a); // no body at all
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ duplicate: false, stake: { status: 'cooling', credits_staked_usd: '10.0000' } });
    expect(Date.parse(r.body.stake.cooling_until)).toBe(at + 7 * DAY);
    expect(await levels(a)).not.toContain('staked');
    expect(await logEntry(r.body.stake.log_index)).toMatchObject({ kind: 'stake.unstake_requested', data: { stake_id: r.body.stake.stake_id, cooling_until: at + 7 * DAY } });
    expect((await unstake(a, {})).body).toMatchObject({ duplicate: true, stake: { status: 'cooling' } });
    // Unknown fields are dropped, as on every route.
    expect((await unstake(a, { reason: 'x' })).body.duplicate).toBe(true);
    expect((await unstake(a, 'not json')).status).toBe(400);
    const cooling = await stake(a, 'low');
    expect(cooling.status).toBe(409);
    expect(cooling.body.error_code).toBe('STAKE_COOLING');

    t.clock.set(at + 7 * DAY - 1);
    expect(await billing(a)).toMatchObject({ credits_remaining_usd: '2.0000', credits_staked_usd: '10.0000' });
    t.clock.set(at + 7 * DAY);
    expect(await billing(a)).toMatchObject({ credits_remaining_usd: '12.0000', credits_staked_usd: '0.0000' });
    // Read again, through usage and billing: returned once.
    await t.request('GET', '/v1/usage', { token: a.apiKey });
    expect(await billing(a)).toMatchObject({ credits_remaining_usd: '12.0000', credits_staked_usd: '0.0000' });
    expect(await billingModuleFor(t.config)!.credits.ledgerBalance(a.agentId)).toBe(120_000);
    const released = await t.database.db.selectFrom('credit_ledger').select('amount_units').where('agent_id', '=', a.agentId).where('kind', '=', 'unstake').execute();
    expect(released.map((x) => Number(x.amount_units))).toEqual([100_000]);
    // Ended: nothing to unstake; a new stake can be made.
    expect((await unstake(a)).body.error_code).toBe('STAKE_NOT_FOUND');
    expect((await stake(a, 'low')).status).toBe(201);
  });

  test('404 STAKE_NOT_FOUND without a stake; 401 without a key', async () => {
    const a = await t.registerAgent();
    const r = await unstake(a);
    expect(r.status).toBe(404);
    expect(r.body.error_code).toBe('STAKE_NOT_FOUND');
    expect((await t.request('POST', '/v1/agents/passport/unstake')).status).toBe(401);
  });
});

describe('sponsorship', () => {
  test('a staked sponsor makes the ward sponsored; a repeat answers it; revoke keeps it for 7 days; the slot frees after', async () => {
    const s = await staked(1_000);
    const w = await t.registerAgent();
    expect(await levels(w)).not.toContain('sponsored');
    const r = await sponsor(s, s.agentId, w.agentId);
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ duplicate: false, sponsorship: { sponsor_agent_id: s.agentId, ward_agent_id: w.agentId, status: 'active', ring_flagged: false }, ring: { flagged: false } });
    expect(await levels(w)).toContain('sponsored');
    expect(await logEntry(r.body.sponsorship.log_index)).toMatchObject({ kind: 'sponsorship.created', agent_id: w.agentId, data: { sponsor_agent_id: s.agentId } });
    const again = await sponsor(s, s.agentId, w.agentId);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true, sponsorship: { sponsorship_id: r.body.sponsorship.sponsorship_id } });

    const rv = await sponsor(s, s.agentId, w.agentId, true);
    expect(rv.status).toBe(200);
    expect(rv.body.sponsorship.status).toBe('revoking');
    expect(Date.parse(rv.body.sponsorship.revokes_at)).toBe(t.clock.now() + 7 * DAY);
    expect((await sponsor(s, s.agentId, w.agentId, true)).body.duplicate).toBe(true);
    const pending = await sponsor(s, s.agentId, w.agentId);
    expect(pending.status).toBe(409);
    expect(pending.body.error_code).toBe('SPONSORSHIP_REVOKE_PENDING');
    advance(7 * DAY - 1);
    expect(await levels(w)).toContain('sponsored');
    advance(1);
    expect(await levels(w)).not.toContain('sponsored');
    const gone = await sponsor(s, s.agentId, w.agentId, true);
    expect(gone.status).toBe(404);
    expect(gone.body.error_code).toBe('SPONSORSHIP_NOT_FOUND');
    expect((await sponsor(s, s.agentId, w.agentId)).status).toBe(201);
  });

  test('at most 5 wards in force (a revoking one counts); every refusal code; security', async () => {
    const s = await staked(1_000);
    const wards = await Promise.all(Array.from({ length: 6 }, () => t.registerAgent()));
    for (const w of wards.slice(0, 5)) expect((await sponsor(s, s.agentId, w.agentId)).status).toBe(201);
    const sixth = await sponsor(s, s.agentId, wards[5].agentId);
    expect(sixth.status).toBe(409);
    expect(sixth.body).toMatchObject({ error_code: 'SPONSOR_WARD_LIMIT', max_active_wards: 5 });
    await sponsor(s, s.agentId, wards[0].agentId, true);
    expect((await sponsor(s, s.agentId, wards[5].agentId)).body.error_code).toBe('SPONSOR_WARD_LIMIT');
    advance(7 * DAY);
    expect((await sponsor(s, s.agentId, wards[5].agentId)).status).toBe(201);

    const other = await t.registerAgent();
    const forbidden = await sponsor(other, s.agentId, wards[0].agentId);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error_code).toBe('SPONSORSHIP_FORBIDDEN');
    expect((await sponsor(other, s.agentId, wards[0].agentId, true)).body.error_code).toBe('SPONSORSHIP_FORBIDDEN');
    const unstakedSponsor = await sponsor(other, other.agentId, wards[0].agentId);
    expect(unstakedSponsor.status).toBe(403);
    expect(unstakedSponsor.body.error_code).toBe('SPONSOR_NOT_STAKED');
    const self = await sponsor(s, s.agentId, s.agentId);
    expect(self.body).toMatchObject({ error_code: 'SPONSORSHIP_INELIGIBLE', reason: 'self' });
    const owned = await staked(1_000, 'low', { owner_identifier: 'one-owner@example.test' });
    const sibling = await t.registerAgent({ owner_identifier: 'one-owner@example.test' });
    expect((await sponsor(owned, owned.agentId, sibling.agentId)).body).toMatchObject({ error_code: 'SPONSORSHIP_INELIGIBLE', reason: 'same_owner' });
    for (const ward of ['not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
      const r = await sponsor(s, s.agentId, ward);
      expect(r.status).toBe(404);
      expect(r.body.error_code).toBe('AGENT_NOT_FOUND');
    }
    expect((await t.request('POST', `/v1/agents/${s.agentId}/sponsor/${wards[1].agentId}`)).status).toBe(401);
  });

  test('a sponsor that starts unstaking confers nothing; rings of two and three are flagged on every sponsorship, in the log and the trace, and confer nothing', async () => {
    const [a, b, c] = [await staked(1_000), await staked(1_000), await staked(1_000)];
    expect((await sponsor(a, a.agentId, b.agentId)).body.ring.flagged).toBe(false);
    expect(await levels(b)).toContain('sponsored');
    const closing = await sponsor(b, b.agentId, a.agentId);
    expect(closing.status).toBe(201);
    expect(closing.body.ring.flagged).toBe(true);
    expect(closing.body.ring.sponsorship_ids).toHaveLength(2);
    expect(await levels(a)).not.toContain('sponsored');
    expect(await levels(b)).not.toContain('sponsored');
    const trace = (await t.request('GET', `/admin/trust/decision-trace/${b.agentId}`, { headers: admin })).body.facts;
    expect(trace.sponsorship_rings.value).toBe(2);
    const ringEntry = await logEntry(trace.sponsorship_rings.log_indexes[0]);
    expect(ringEntry).toMatchObject({ kind: 'sponsorship.ring_flagged', data: { sponsorship_ids: [...closing.body.ring.sponsorship_ids].sort() } });
    expect(trace.sponsored_by).toMatchObject({ value: 0, sponsorships: [{ sponsor_agent_id: a.agentId, ring_flagged: true, confers: false }] });

    // A three-agent ring: c -> a (a already sponsors b, b sponsors a) stays out; b -> c and c -> b... build x -> y -> z -> x.
    const [x, y, z] = [await staked(1_000), await staked(1_000), await staked(1_000)];
    expect((await sponsor(x, x.agentId, y.agentId)).body.ring.flagged).toBe(false);
    expect((await sponsor(y, y.agentId, z.agentId)).body.ring.flagged).toBe(false);
    expect(await levels(z)).toContain('sponsored');
    const third = await sponsor(z, z.agentId, x.agentId);
    expect(third.body.ring).toMatchObject({ flagged: true });
    expect(third.body.ring.sponsorship_ids).toHaveLength(3);
    for (const agent of [x, y, z]) expect(await levels(agent)).not.toContain('sponsored');

    // c sponsors a ward; the ward is sponsored until c starts to unstake.
    const w = await t.registerAgent();
    await sponsor(c, c.agentId, w.agentId);
    expect(await levels(w)).toContain('sponsored');
    advance(30 * DAY);
    expect((await unstake(c)).status).toBe(200);
    expect(await levels(w)).not.toContain('sponsored');
  });
});

describe('slash', () => {
  test('0.7 to the harmed agent as never-expiring credit, 0.2 to the insurance pool, 0.1 burned; exact to the unit; in the log', async () => {
    const a = await staked(1_000);
    const harmed = await t.registerAgent();
    const m = billingModuleFor(t.config)!;
    const poolsBefore = await m.stakeLedger.pools(t.database.db, t.clock.now());
    const r = await slash(a.agentId, { credits: 100, reason: 'sold a forged report', harmed_agent_id: harmed.agentId });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      requested_credits: 100, credits_taken_usd: '1.0000', shortfall_usd: '0.0000', harmed_credit_usd: '0.7000', insurance_usd: '0.2000', burned_usd: '0.1000',
      takes: [{ agent_id: a.agentId, role: 'agent', taken_usd: '1.0000' }],
    });
    expect(await billing(harmed)).toMatchObject({ credits_remaining_usd: '0.7000', credits_expire_at: null });
    expect(await billing(a)).toMatchObject({ credits_staked_usd: '9.0000' });
    const pools = await m.stakeLedger.pools(t.database.db, t.clock.now());
    expect(pools.insurance - poolsBefore.insurance).toBe(2_000);
    expect(pools.burned - poolsBefore.burned).toBe(1_000);
    expect(await levels(a)).toContain('staked');
    const entry = await logEntry(r.body.log_index);
    expect(entry).toMatchObject({ kind: 'stake.slashed', agent_id: a.agentId, data: { requested_units: 10_000, harmed_agent_id: harmed.agentId } });
    expect(JSON.stringify(entry)).not.toContain('forged');
  });

  test('a ward\'s sponsors lose a quarter of the amount; the remainder of a division is burned; more than the stake takes what is there and says so', async () => {
    const sp = await staked(1_000);
    const ward = await staked(1_000);
    const harmed = await t.registerAgent();
    await sponsor(sp, sp.agentId, ward.agentId);
    // 3 credits: the sponsor's quarter is 75 units: 52 to the harmed agent, 15 to the pool, 8 burned.
    const r = await slash(ward.agentId, { credits: 3, reason: 'r', harmed_agent_id: harmed.agentId });
    expect(r.body.takes).toEqual([
      expect.objectContaining({ agent_id: ward.agentId, role: 'agent', taken_usd: '0.0300', harmed_usd: '0.0210', insurance_usd: '0.0060', burned_usd: '0.0030' }),
      expect.objectContaining({ agent_id: sp.agentId, role: 'sponsor', taken_usd: '0.0075', harmed_usd: '0.0052', insurance_usd: '0.0015', burned_usd: '0.0008' }),
    ]);
    expect(r.body).toMatchObject({ credits_taken_usd: '0.0375', harmed_credit_usd: '0.0262' });
    expect(await billing(harmed)).toMatchObject({ credits_remaining_usd: '0.0262' });

    const big = await slash(ward.agentId, { credits: 5_000, reason: 'r', harmed_agent_id: harmed.agentId });
    expect(big.status).toBe(200);
    expect(big.body.takes[0]).toMatchObject({ role: 'agent', taken_usd: '9.9700' });
    expect(big.body.shortfall_usd).toBe('40.0300');
    // The sponsor's quarter (12.5 USD) is more than its stake has left: it gives what it has.
    expect(big.body.takes[1]).toMatchObject({ role: 'sponsor', taken_usd: '9.9925' });
    expect(await billing(ward)).toMatchObject({ credits_staked_usd: '0.0000' });
    expect(await levels(ward)).not.toContain('staked');
    expect(await levels(ward)).not.toContain('sponsored');
    const nothing = await slash(ward.agentId, { credits: 1, reason: 'r', harmed_agent_id: harmed.agentId });
    expect(nothing.status).toBe(409);
    expect(nothing.body.error_code).toBe('NOTHING_TO_SLASH');
  });

  test('every error code and admin only', async () => {
    const a = await staked(1_000);
    const h = await t.registerAgent();
    const ok = { credits: 1, reason: 'r', harmed_agent_id: h.agentId };
    expect((await slash(a.agentId, ok, {})).status).toBe(401);
    expect((await slash(a.agentId, ok, { 'x-admin-key': 'wrong' })).body.error_code).toBe('INVALID_ADMIN_KEY');
    expect((await t.request('POST', `/admin/agents/${a.agentId}/slash`, { token: a.apiKey, body: ok })).status).toBe(401);
    expect((await slash('00000000-0000-4000-8000-000000000000', ok)).body.error_code).toBe('AGENT_NOT_FOUND');
    expect((await slash('nope', ok)).status).toBe(404);
    for (const credits of [0, 1.5, -1, 'x', 1_000_001]) expect((await slash(a.agentId, { ...ok, credits })).body.error_code).toBe('SLASH_CREDITS_INVALID');
    for (const reason of ['', '   ', undefined]) expect((await slash(a.agentId, { ...ok, reason })).body.error_code).toBe('SLASH_REASON_INVALID');
    for (const harmed of [a.agentId, 'nope', '00000000-0000-4000-8000-000000000000', undefined]) {
      const r = await slash(a.agentId, { ...ok, harmed_agent_id: harmed });
      expect(r.status, String(harmed)).toBe(422);
      expect(r.body.error_code).toBe('SLASH_HARMED_AGENT_INVALID');
    }
    expect(await billing(a)).toMatchObject({ credits_staked_usd: '10.0000' });
  });
});

describe('the log and its projections', () => {
  test('the parity check rebuilds stakes, sponsorships and slashes from the log and finds them equal, money included; a tampered row is reported', async () => {
    const clean = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
    expect(clean.body.mismatches).toEqual([]);
    expect(clean.body.ok).toBe(true);
    const row = await t.database.db.selectFrom('stakes').select(['stake_id', 'units']).where('status', '=', 'active').executeTakeFirstOrThrow();
    await t.database.db.updateTable('stakes').set({ units: Number(row.units) + 1 }).where('stake_id', '=', row.stake_id).execute();
    const bad = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
    expect(bad.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'stakes', key: row.stake_id, field: 'units' })]));
    await t.database.db.updateTable('stakes').set({ units: Number(row.units) }).where('stake_id', '=', row.stake_id).execute();
    const adoption = await t.request('GET', '/admin/trust/adoption', { headers: admin });
    expect(adoption.body.stake.stakes_by_tier.low).toBeGreaterThan(0);
    expect(adoption.body.stake.slashes_in_window).toBeGreaterThan(0);
  });
});

describe('discovery', () => {
  test('capabilities, the trust tool file, the guide and OpenAPI name the stake routes as served, with their codes', async () => {
    const routes = ['POST /v1/agents/passport/stake', 'POST /v1/agents/passport/unstake', 'POST /v1/agents/{sponsor_id}/sponsor/{ward_id}', 'POST /v1/agents/{sponsor_id}/sponsor/{ward_id}/revoke'];
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    const trustBlock = JSON.stringify(caps);
    for (const r of routes) expect(trustBlock).toContain(r.split(' ')[1]);
    expect(trustBlock).toContain('/admin/agents/{agent_id}/slash');
    const file = (await t.request('GET', '/mcp/v1/svc-trust.json')).body;
    const actions = JSON.stringify(file);
    for (const action of ['stake', 'unstake', 'sponsor', 'revoke_sponsorship']) expect(actions).toContain(`"${action}"`);
    const guide = (await t.request('GET', '/v1/guide')).body.steps.filter((x: { group: string; step: string }) => x.group === 'trust' && ['stake', 'sponsor', 'unstake'].includes(x.step));
    expect(guide).toHaveLength(3);
    for (const step of guide) expect(step.served, step.step).toBe(true);
    const openapi = (await t.request('GET', '/openapi.json')).body;
    const stakeOp = openapi.paths['/v1/agents/passport/stake'].post;
    expect(Object.keys(stakeOp.responses)).toEqual(expect.arrayContaining(['201', '200', '402', '403', '409', '422']));
    expect(JSON.stringify(openapi.paths['/v1/agents/{sponsor_id}/sponsor/{ward_id}'].post.responses['409'])).toContain('SPONSOR_WARD_LIMIT');
    expect(JSON.stringify(openapi.paths['/admin/agents/{agent_id}/slash'].post.responses['409'])).toContain('NOTHING_TO_SLASH');
  });
});
