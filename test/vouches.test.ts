/**
 * Skill vouching over HTTP: vouch and revoke, every error code, security, the passport's
 * skill_vouches (count = raw_count, weighted_count = the vouchers' weights), the trust log entries
 * and a clean parity check.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

const DAY = 86_400_000;
let t: TestApp;
const admin = { 'x-admin-key': 'test-admin-key' };

const vouch = (by: RegisteredAgent | { apiKey: string }, target: string, skill: unknown, revoke = false) =>
  t.request('POST', `/v1/agents/${target}/vouch${revoke ? '/revoke' : ''}`, { token: by.apiKey, body: { skill } });
const passport = async (id: string) => (await t.request('GET', `/v1/agents/${id}/passport`)).body.passport;

async function withSkills(skills: string[], overrides: Record<string, unknown> = {}) {
  const a = await t.registerAgent(overrides);
  const r = await t.request('POST', '/v1/agents/passport/description', { token: a.apiKey, body: { skills } });
  expect(r.status).toBe(200);
  return a;
}

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('vouching', () => {
  test('a vouch for a listed skill: 201, in the passport and the trust log; a repeat answers the first; revoke takes it back', async () => {
    const target = await withSkills(['typescript', 'sql']);
    const voucher = await t.registerAgent();
    const r = await vouch(voucher, target.agentId, 'typescript');
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ status: 'success', duplicate: false, target_agent_id: target.agentId, voucher_agent_id: voucher.agentId, skill: 'typescript', epoch: 1, voucher_weight: 0.5, revoked_at: null });
    expect(typeof r.body.log_index).toBe('number');
    const again = await vouch(voucher, target.agentId, 'typescript');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true, vouch_id: r.body.vouch_id, log_index: r.body.log_index });

    expect((await passport(target.agentId)).skill_vouches).toEqual({
      typescript: { count: 1, raw_count: 1, weighted_count: 0.5 }, sql: { count: 0, raw_count: 0, weighted_count: 0 },
    });
    const entry = await t.request('GET', `/v1/trust/log/entries?start=${r.body.log_index}&end=${r.body.log_index + 1}`);
    expect(entry.body.entries[0].entry).toMatchObject({ kind: 'vouch.given', agent_id: target.agentId, epoch: 1, data: { vouch_id: r.body.vouch_id, voucher_agent_id: voucher.agentId, skill: 'typescript', voucher_weight: 0.5 } });

    const revoked = await vouch(voucher, target.agentId, 'typescript', true);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ vouch_id: r.body.vouch_id, skill: 'typescript' });
    expect(revoked.body.revoked_log_index).toBeGreaterThan(r.body.log_index);
    expect((await passport(target.agentId)).skill_vouches.typescript).toEqual({ count: 0, raw_count: 0, weighted_count: 0 });
    // A new vouch after a revoke is a new one.
    const renewed = await vouch(voucher, target.agentId, 'typescript');
    expect(renewed.status).toBe(201);
    expect(renewed.body.vouch_id).not.toBe(r.body.vouch_id);
  });

  test('weighted_count sums the vouchers\' weights: an established voucher (30 days) counts 1, a new one 0.5', async () => {
    const old = await t.registerAgent();
    t.clock.advance(31 * DAY);
    const target = await withSkills(['rust']);
    const fresh = await t.registerAgent();
    expect((await vouch(old, target.agentId, 'rust')).body.voucher_weight).toBe(1);
    expect((await vouch(fresh, target.agentId, 'rust')).body.voucher_weight).toBe(0.5);
    expect((await passport(target.agentId)).skill_vouches.rust).toEqual({ count: 2, raw_count: 2, weighted_count: 1.5 });
  });

  test('every refusal: unlisted skill 422, self and same owner 403, unknown target 404, nothing to revoke 404, bad body 422', async () => {
    const target = await withSkills(['go'], { owner_identifier: 'shared-owner@example.test' });
    const sibling = await t.registerAgent({ owner_identifier: 'shared-owner@example.test' });
    const stranger = await t.registerAgent();
    const unlisted = await vouch(stranger, target.agentId, 'python');
    expect([unlisted.status, unlisted.body.error_code, unlisted.body.skills]).toEqual([422, 'VOUCH_SKILL_NOT_LISTED', ['go']]);
    const caseDiffers = await vouch(stranger, target.agentId, 'Go');
    expect(caseDiffers.body.error_code).toBe('VOUCH_SKILL_NOT_LISTED');
    const self = await vouch(target, target.agentId, 'go');
    expect([self.status, self.body.error_code, self.body.reason]).toEqual([403, 'VOUCH_INELIGIBLE', 'self']);
    const same = await vouch(sibling, target.agentId, 'go');
    expect([same.status, same.body.error_code, same.body.reason]).toEqual([403, 'VOUCH_INELIGIBLE', 'same_owner']);
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const r = await vouch(stranger, id, 'go');
      expect([r.status, r.body.error_code]).toEqual([404, 'AGENT_NOT_FOUND']);
    }
    const nothing = await vouch(stranger, target.agentId, 'go', true);
    expect([nothing.status, nothing.body.error_code]).toEqual([404, 'VOUCH_NOT_FOUND']);
    for (const skill of [undefined, '', 'x'.repeat(65), 12]) {
      const r = await t.request('POST', `/v1/agents/${target.agentId}/vouch`, { token: stranger.apiKey, body: skill === undefined ? {} : { skill } });
      expect([r.status, r.body.error_code]).toEqual([422, 'VALIDATION_FAILED']);
    }
  });

  test('a suspended target or a revoked voucher cannot be vouched for / vouch', async () => {
    const target = await withSkills(['ops']);
    const voucher = await t.registerAgent();
    await t.database.db.updateTable('agents').set({ status: 'suspended' }).where('agent_id', '=', target.agentId).execute();
    const r = await vouch(voucher, target.agentId, 'ops');
    expect([r.status, r.body.error_code, r.body.reason]).toEqual([403, 'VOUCH_INELIGIBLE', 'target_inactive']);
    await t.database.db.updateTable('agents').set({ status: 'active' }).where('agent_id', '=', target.agentId).execute();
    const revoke = await t.request('POST', '/v1/me/passport/revoke', { token: voucher.apiKey });
    expect(revoke.status).toBe(200);
    const refused = await vouch(voucher, target.agentId, 'ops');
    expect([refused.status, refused.body.error_code]).toEqual([403, 'PASSPORT_REVOKED']);
  });

  test('no key or a wrong key is 401; another agent cannot revoke my vouch', async () => {
    const target = await withSkills(['ml']);
    const mine = await t.registerAgent();
    const other = await t.registerAgent();
    for (const path of [`/v1/agents/${target.agentId}/vouch`, `/v1/agents/${target.agentId}/vouch/revoke`]) {
      expect((await t.request('POST', path, { body: { skill: 'ml' } })).status).toBe(401);
      expect((await t.request('POST', path, { token: 'svc_wrong', body: { skill: 'ml' } })).status).toBe(401);
    }
    expect((await vouch(mine, target.agentId, 'ml')).status).toBe(201);
    const theirs = await vouch(other, target.agentId, 'ml', true);
    expect([theirs.status, theirs.body.error_code]).toEqual([404, 'VOUCH_NOT_FOUND']);
    expect((await passport(target.agentId)).skill_vouches.ml.count).toBe(1);
  });

  test('concurrent identical vouches make one; the parity check replays vouches and finds an altered row', async () => {
    const target = await withSkills(['k8s']);
    const voucher = await t.registerAgent();
    const answers = await Promise.all(Array.from({ length: 6 }, () => vouch(voucher, target.agentId, 'k8s')));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(new Set(answers.map((a) => a.body.vouch_id)).size).toBe(1);
    const clean = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
    expect([clean.body.ok, clean.body.mismatch_count]).toEqual([true, 0]);
    await t.database.db.updateTable('vouches').set({ weight: 1 }).where('vouch_id', '=', answers[0].body.vouch_id).execute();
    const bad = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
    expect(bad.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'vouches', key: answers[0].body.vouch_id, field: 'weight', expected: 0.5, stored: 1 })]));
    await t.database.db.updateTable('vouches').set({ weight: 0.5 }).where('vouch_id', '=', answers[0].body.vouch_id).execute();
    const adoption = await t.request('GET', '/admin/trust/adoption', { headers: admin });
    expect(adoption.body.vouches.active).toBeGreaterThanOrEqual(1);
  });
});
