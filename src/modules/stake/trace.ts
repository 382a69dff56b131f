/** The stake module's part of the decision trace: the agent's stake, its sponsors, its wards and ring flags, with the log entries behind them. */
import { iso, type Clock } from '../../lib/clock';
import { formatUsd } from '../../lib/money';
import type { TraceSection, TracedFact } from '../trust/admin';
import { MAX_ACTIVE_WARDS } from './rules';
import type { StakeStore } from './store';

export function stakeTrace(store: StakeStore, clock: Clock): TraceSection {
  return async (agentId) => {
    const now = clock.now();
    const [open, sponsors, wards] = await Promise.all([store.open(agentId), store.sponsorsOf(agentId, now), store.wardsOf(agentId, now)]);
    const sponsorStakes = await Promise.all(sponsors.map((s) => store.open(s.sponsor_agent_id)));
    const confers = sponsors.map((s, i) => s.ring_flagged_at === null && sponsorStakes[i]?.status === 'active' && (sponsorStakes[i]?.units ?? 0) > 0);
    const indexes = (s: { created_log_index: number; revoke_log_index: number | null; ring_log_index: number | null }) =>
      [s.created_log_index, s.revoke_log_index, s.ring_log_index].filter((i): i is number => i !== null);
    const flagged = [...sponsors, ...wards].filter((s) => s.ring_flagged_at !== null);
    const facts: Record<string, TracedFact> = {
      stake: {
        value: open ? open.status : null,
        rule: 'staked: an active stake with credit in it (a cooling stake is not); locked 30 days after its last lock, then 7 days of cooling after unstake',
        log_indexes: open ? [...new Set([open.created_log_index, open.updated_log_index])] : [],
        tier: open?.tier ?? null, credits_staked_usd: open ? formatUsd(open.units) : null,
        locked_until: open ? iso(open.locked_until) : null, cooling_until: open?.cooling_until ? iso(open.cooling_until) : null,
      },
      sponsored_by: {
        value: confers.filter(Boolean).length,
        rule: 'sponsored: a sponsorship in force (a revoke takes effect 7 days after it is asked), not ring-flagged, whose sponsor holds an active stake',
        log_indexes: sponsors.flatMap(indexes),
        sponsorships: sponsors.map((s, i) => ({
          sponsorship_id: s.sponsorship_id, sponsor_agent_id: s.sponsor_agent_id, confers: confers[i], ring_flagged: s.ring_flagged_at !== null,
          sponsor_staked: sponsorStakes[i]?.status === 'active', revokes_at: s.revokes_at === null ? null : iso(s.revokes_at),
        })),
      },
      sponsoring: {
        value: wards.length,
        rule: `a sponsor holds an active stake and has at most ${MAX_ACTIVE_WARDS} wards in force`,
        log_indexes: wards.flatMap(indexes),
        wards: wards.map((s) => ({ sponsorship_id: s.sponsorship_id, ward_agent_id: s.ward_agent_id, ring_flagged: s.ring_flagged_at !== null })),
      },
      sponsorship_rings: {
        value: flagged.length,
        rule: 'every sponsorship on a cycle of sponsorships (a ring) is flagged when the ring closes, and confers nothing',
        log_indexes: [...new Set(flagged.map((s) => s.ring_log_index!))],
      },
    };
    return facts;
  };
}
