import { iso } from '../../lib/clock';
import { CAPABILITIES } from '../../lib/capabilities';
import { tierOf } from '../../lib/tiers';
import type { AgentsTable, PassportsTable } from '../../infra/db/tables/core';

export const ALL_CAPABILITIES = CAPABILITIES;

/** Tier rule: every active agent may use these; commons-publish needs a paying tier or a scoped key that grants it. */
const FREE_TIER_CAPABILITIES = ['svc:search', 'svc:memory', 'svc:browse', 'svc:commons-read', 'svc:blob-store'];

export function verifiedCapabilities(agent: Pick<AgentsTable, 'tier' | 'status'>, scopedKeyScopes: string[][]): string[] {
  if (agent.status !== 'active') return [];
  const set = new Set<string>(tierOf(agent.tier).name === 'free' ? FREE_TIER_CAPABILITIES : ALL_CAPABILITIES);
  for (const scopes of scopedKeyScopes) for (const s of scopes) if ((ALL_CAPABILITIES as readonly string[]).includes(s)) set.add(s);
  return ALL_CAPABILITIES.filter((c) => set.has(c));
}

export const SUB_SIGNAL_CATEGORIES = ['task_completion', 'accuracy', 'responsiveness'] as const;

/** Reputation at the Beta(1,1) prior: what an agent with no rated interactions shows. */
export function priorReputation() {
  const a = 1;
  const b = 1;
  const mean = a / (a + b);
  const variance = (a * b) / ((a + b) ** 2 * (a + b + 1));
  const half = 1.96 * Math.sqrt(variance);
  return {
    score: mean,
    status: 'insufficient_data',
    variance: Number(variance.toFixed(6)),
    confidence_interval: [Math.max(0, Number((mean - half).toFixed(4))), Math.min(1, Number((mean + half).toFixed(4)))],
    beta_alpha: a,
    beta_beta: b,
    event_count: 0,
    signal_count: 0,
    beta_half_life_days: 30,
    scoring_model: 'beta_v1',
    decay_half_life_days: 90,
    last_updated: null,
    notice: 'Score is the Beta mean alpha/(alpha+beta) over rated interactions; with no interactions it is the prior 0.5.',
  };
}

export function publicPassport(
  agent: AgentsTable,
  passport: PassportsTable,
  /** trustLevels: from the trust layer's one function (src/modules/trust/levels.ts). */
  opts: { baseUrl: string; scopedKeyScopes: string[][]; trustLevels: string[] },
) {
  const decomposed = passport.sub_signal_visibility === 'decomposed';
  return {
    did: `did:svc:${agent.agent_id}`,
    agent_id: agent.agent_id,
    agent_name: agent.agent_name,
    public_key: passport.public_key_pem,
    derivation_method: passport.derivation_method,
    key_algorithm: passport.key_algorithm,
    suite: 'ed25519',
    capabilities: {
      // A revoked passport vouches for nothing.
      verified: passport.revoked_at === null ? verifiedCapabilities(agent, opts.scopedKeyScopes) : [],
      self_reported: passport.self_reported_capabilities,
      self_reported_notice: 'self_reported is text written by the agent operator; it is never treated as verified.',
    },
    trust_levels: opts.trustLevels,
    endpoint: `${opts.baseUrl}/v1/agents/${agent.agent_id}/passport`,
    created_at: iso(passport.created_at),
    revoked_at: passport.revoked_at === null ? null : iso(passport.revoked_at),
    skill_vouches: {} as Record<string, { count: number; raw_count: number; weighted_count: number }>,
    reputation: priorReputation(),
    ...(decomposed ? { reputation_sub_signals: Object.fromEntries(SUB_SIGNAL_CATEGORIES.map((c) => [c, null])) as Record<(typeof SUB_SIGNAL_CATEGORIES)[number], null> } : {}),
    bio: passport.bio,
    skills: JSON.parse(passport.skills) as string[],
    agent_type: passport.agent_type ?? null,
    domain: passport.domain ?? null,
    listed: passport.listed === 1,
    reputation_sub_signal_visibility: passport.sub_signal_visibility,
  };
}
