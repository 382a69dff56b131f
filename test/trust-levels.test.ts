/**
 * Trust levels come from one function (src/modules/trust/levels.ts): the rule itself, and every
 * reader showing the same answer — GET /v1/me, the public passport, the agent card, the decision
 * trace, the rater weight of a rating and the dynamic-browse probation.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createProbation } from '../src/modules/browse/trust';
import { ELEVATED_LEVELS, ESTABLISHED_AFTER_DAYS, TRUST_LEVELS, trustLevels, type TrustLevelFacts } from '../src/modules/trust/levels';
import { tierOf } from '../src/lib/tiers';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 0, 31);

describe('the rule', () => {
  const base: TrustLevelFacts = {
    active: true, frozen: false, epochOpenedAt: NOW, ephemeralSession: false, standing: { stakedActive: false, sponsoredActive: false },
  };
  test('floor for everyone; established from 30 days into the current epoch, when active and not frozen', () => {
    expect(trustLevels(base, NOW)).toEqual(['floor']);
    expect(trustLevels(base, NOW + ESTABLISHED_AFTER_DAYS * DAY - 1)).toEqual(['floor']);
    expect(trustLevels(base, NOW + ESTABLISHED_AFTER_DAYS * DAY)).toEqual(['floor', 'established']);
    expect(trustLevels({ ...base, frozen: true }, NOW + 90 * DAY)).toEqual(['floor']);
    expect(trustLevels({ ...base, active: false }, NOW + 90 * DAY)).toEqual(['floor']);
  });

  test('ephemeral from the session; staked and sponsored from the standing projection; levels in a fixed order', () => {
    expect(trustLevels({ ...base, ephemeralSession: true }, NOW)).toEqual(['floor', 'ephemeral']);
    expect(trustLevels({ ...base, standing: { stakedActive: true, sponsoredActive: false } }, NOW)).toEqual(['floor', 'staked']);
    expect(trustLevels({ ...base, standing: { stakedActive: false, sponsoredActive: true } }, NOW)).toEqual(['floor', 'sponsored']);
    expect(trustLevels({ ...base, ephemeralSession: true, standing: { stakedActive: true, sponsoredActive: true } }, NOW + 30 * DAY))
      .toEqual([...TRUST_LEVELS]);
    // Staked and sponsored do not need the account to be unfrozen: they are facts of the stake projection.
    expect(trustLevels({ ...base, frozen: true, standing: { stakedActive: true, sponsoredActive: false } }, NOW)).toEqual(['floor', 'staked']);
  });

  test('browse probation reads the levels: an elevated level ends it for a free-tier newcomer', async () => {
    let levels: string[] = ['floor'];
    const probation = createProbation({
      tiers: { effectiveTier: async () => tierOf('free') }, levels: async () => levels, probationHours: 24, now: () => NOW,
    });
    const newcomer = { agentId: 'a', tier: 'free', createdAt: NOW - 3_600_000 };
    expect(await probation.isProbationary(newcomer)).toBe(true);
    for (const l of ELEVATED_LEVELS) {
      levels = ['floor', l];
      expect(await probation.isProbationary(newcomer), l).toBe(false);
    }
    levels = ['floor', 'ephemeral'];
    expect(await probation.isProbationary(newcomer)).toBe(true);
  });
});

describe('every reader shows the same levels', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  async function shown(agent: RegisteredAgent) {
    const [me, passport, card, trace] = await Promise.all([
      t.request('GET', '/v1/me', { token: agent.apiKey }),
      t.request('GET', `/v1/agents/${agent.agentId}/passport`),
      t.request('GET', `/v1/agents/${agent.agentId}/agent-card`),
      t.request('GET', `/admin/trust/decision-trace/${agent.agentId}`, { headers: { 'x-admin-key': 'test-admin-key' } }),
    ]);
    const ext = card.body.capabilities.extensions.find((e: any) => e.uri === 'svc:passport');
    return {
      me: me.status === 200 ? me.body.trust_levels : `me ${me.status}`,
      passport: passport.body.passport.trust_levels,
      card: ext.params.trust_levels,
      trace: trace.body.facts.trust_levels.value,
    };
  }
  const same = (levels: string[]) => ({ me: levels, passport: levels, card: levels, trace: levels });

  async function listedAgent() {
    const a = await t.registerAgent();
    const d = await t.request('POST', '/v1/agents/passport/description', { token: a.apiKey, body: { bio: 'Levels test agent', listed: true } });
    expect(d.status).toBe(200);
    return a;
  }

  test('floor at registration, established after 30 days (injected clock), on /v1/me, passport, agent card and trace', async () => {
    const a = await listedAgent();
    const normalize = () => shown(a);
    expect(await normalize()).toEqual(same(['floor']));
    t.clock.advanceDays(ESTABLISHED_AFTER_DAYS - 1);
    expect(await normalize()).toEqual(same(['floor']));
    t.clock.advanceDays(1);
    expect(await normalize()).toEqual(same(['floor', 'established']));

    // Frozen: not established anywhere.
    await t.database.db.updateTable('agents').set({ frozen: 1 }).where('agent_id', '=', a.agentId).execute();
    expect(await normalize()).toEqual(same(['floor']));
    await t.database.db.updateTable('agents').set({ frozen: 0 }).where('agent_id', '=', a.agentId).execute();
    expect(await normalize()).toEqual(same(['floor', 'established']));
  });

  test('suspended: not established (the public views; a suspended agent\'s key no longer authenticates)', async () => {
    const a = await listedAgent();
    t.clock.advanceDays(31);
    await t.database.db.updateTable('agents').set({ status: 'suspended' }).where('agent_id', '=', a.agentId).execute();
    const s = await shown(a);
    expect(s.me).toBe('me 401');
    expect(s.passport).toEqual(['floor']);
    expect(s.card).toEqual(['floor']);
  });

  test('the 30 days count in the current custody epoch: a new epoch starts them again', async () => {
    const a = await listedAgent();
    t.clock.advanceDays(40);
    expect((await shown(a)).passport).toEqual(['floor', 'established']);
    // A custody change (the custody module's work) closes epoch 1 and opens epoch 2 now.
    const now = t.clock.now();
    await t.database.db.updateTable('agent_epochs').set({ closed_at: now }).where('agent_id', '=', a.agentId).where('epoch', '=', 1).execute();
    await t.database.db.insertInto('agent_epochs')
      .values({ agent_id: a.agentId, epoch: 2, opened_at: now, opened_by: 'custody_transfer', closed_at: null, open_log_index: null }).execute();
    expect((await shown(a)).passport).toEqual(['floor']);
    t.clock.advanceDays(ESTABLISHED_AFTER_DAYS);
    expect((await shown(a)).passport).toEqual(['floor', 'established']);
  });

  test('the rater weight reads the same levels: 1 for an established rater, 0.5 for a newcomer', async () => {
    const old = await t.registerAgent();
    t.clock.advanceDays(ESTABLISHED_AFTER_DAYS);
    const fresh = await t.registerAgent();
    const subject = await t.registerAgent();
    const rate = (rater: RegisteredAgent, ref: string) => t.request('POST', '/v1/feedback/interaction', {
      token: rater.apiKey, body: { subject_agent_id: subject.agentId, ref_type: 'task', ref_id: ref, outcome: 'approved', category: 'accuracy' },
    });
    const r1 = await rate(old, 'levels-1');
    const r2 = await rate(fresh, 'levels-2');
    expect([r1.status, r2.status]).toEqual([201, 201]);
    expect(r1.body.rater_weight).toBe(1);
    expect(r2.body.rater_weight).toBe(0.5);
  });

  test('capabilities publish the levels and their rules', async () => {
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    const text = JSON.stringify(caps);
    expect(text).toContain('"trust_levels":["floor","ephemeral","staked","sponsored","established"]');
    expect(text).toContain('at least 30 days in the current custody epoch');
  });
});
