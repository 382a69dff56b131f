/**
 * Stake, sponsorship and slashing. Every change is one transaction holding the account locks of the
 * agents whose credit moves (billing's stake ledger: the money moves only there) and the trust log's
 * append lock, and appends its trust log entry in it; the tables here are projections of the log.
 *
 *   stake      locks 1,000 / 10,000 / 50,000 credits (low / medium / high) for at least 30 days;
 *              a higher tier (or a stake a slash made smaller) locks the difference and restarts the lock
 *   unstake    after the lock: 7 days of cooling (no longer `staked`), then the credit returns, once
 *   sponsor    a staked sponsor vouches for a ward with its stake (fewer than 5 wards in force; rings flagged)
 *   revoke     takes effect 7 days later; the ward stays sponsored until then
 *   slash      (admin) from the stake: 0.7 to the harmed agent, 0.2 to the insurance pool, the rest
 *              burned; a ward's sponsors lose 0.25 of the amount from their stakes too
 */
import type { Kysely, Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import type { SlashesTable, SponsorshipsTable, StakesTable } from '../../infra/db/tables/stake';
import { iso, type Clock } from '../../lib/clock';
import { sha256hex } from '../../lib/hash';
import { newId, newOrderedId } from '../../lib/ids';
import { credits, formatUsd, type Units } from '../../lib/money';
import type { SlashSplit, StakeLedger } from '../billing/stake-ledger';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import { ringThrough } from './rings';
import {
  MAX_ACTIVE_WARDS, SPONSOR_REVOKE_GRACE_MS, sponsorShare, STAKE_LOCK_MS, stakeUnits, tierRank, UNSTAKE_COOLING_MS, type StakeTier,
} from './rules';
import type { StakeStore } from './store';

/** What the stake module needs to know of an agent (identity's trust profile). */
export interface StakeProfile { agentId: string; owner: string; active: boolean; passportActive: boolean }

type Trx = Transaction<Database>;

export function stakeView(s: StakesTable) {
  return {
    stake_id: s.stake_id, tier: s.tier, status: s.status, credits_staked_usd: formatUsd(s.units),
    staked_at: iso(s.staked_at), locked_until: iso(s.locked_until),
    cooling_until: s.cooling_until === null ? null : iso(s.cooling_until),
    ended_at: s.ended_at === null ? null : iso(s.ended_at),
    credits_returned_usd: s.released_units === null ? null : formatUsd(s.released_units),
    log_index: s.updated_log_index,
  };
}

export function sponsorshipView(s: SponsorshipsTable, now: number) {
  return {
    sponsorship_id: s.sponsorship_id, sponsor_agent_id: s.sponsor_agent_id, ward_agent_id: s.ward_agent_id,
    status: s.revokes_at !== null && s.revokes_at <= now ? 'revoked' : s.revokes_at !== null ? 'revoking' : 'active',
    created_at: iso(s.created_at), revokes_at: s.revokes_at === null ? null : iso(s.revokes_at),
    ring_flagged: s.ring_flagged_at !== null, log_index: s.created_log_index,
  };
}

export function createStakeService(deps: {
  db: Kysely<Database>; store: StakeStore; ledger: StakeLedger; log: TrustLog; epochs: Epochs; clock: Clock;
  profile: (agentId: string) => Promise<StakeProfile | undefined>;
}) {
  const { db, store, ledger, log, epochs, clock } = deps;

  /** Appends a fact about `agentId` in `trx`, in the agent's current epoch. */
  async function append(trx: Trx, kind: Parameters<TrustLog['append']>[1]['kind'], agentId: string, now: number, data: Record<string, unknown>) {
    return log.append(trx, { kind, agentId, epoch: await epochs.current(agentId, trx), at: now, data });
  }

  async function activeProfile(agentId: string, what: string): Promise<StakeProfile> {
    const p = await deps.profile(agentId);
    if (!p) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
    if (!p.active || !p.passportActive) throw new ApiError(403, 'PASSPORT_REVOKED', `Your passport is revoked or your agent is not active: it cannot ${what}`);
    return p;
  }

  /** Returns a cooling stake's credit once its cooling is over (any instance; the first one does it). */
  async function settleAgent(agentId: string): Promise<void> {
    const now = clock.now();
    const open = await store.open(agentId);
    if (open?.status !== 'cooling' || open.cooling_until! > now) return;
    await ledger.withAccounts([agentId], now, async (trx) => {
      await log.lockHeadFor(trx);
      // Read again under the locks: another instance may have returned it meanwhile.
      const s = await store.open(agentId, trx);
      if (s?.status !== 'cooling' || s.cooling_until! > now) return;
      const units = await ledger.release(trx, { agentId, stakeId: s.stake_id, now });
      const appended = await append(trx, 'stake.released', agentId, now, { stake_id: s.stake_id, units_returned: units });
      const moved = await store.updateStake(trx, s.stake_id, ['cooling'], {
        status: 'released', units: 0, ended_at: now, released_units: units, updated_log_index: appended.index,
      });
      if (!moved) throw new Error(`stake ${s.stake_id} changed under its lock`);
    });
  }

  return {
    settleAgent,

    /** Returns the credit of every stake whose cooling is over (the sweeper), up to `limit` agents. */
    async settleDue(limit = 100): Promise<number> {
      const agents = await store.dueBack(clock.now(), limit);
      for (const a of agents) await settleAgent(a);
      return agents.length;
    },

    async stake(agentId: string, tier: StakeTier) {
      await activeProfile(agentId, 'stake');
      await settleAgent(agentId);
      const now = clock.now();
      return ledger.withAccounts([agentId], now, async (trx) => {
        await log.lockHeadFor(trx);
        const open = await store.open(agentId, trx);
        if (open?.status === 'cooling') {
          throw new ApiError(409, 'STAKE_COOLING', `Your stake is cooling until ${iso(open.cooling_until!)}: its credit returns then, and a new stake can be made after`, { cooling_until: iso(open.cooling_until!) });
        }
        if (open && tierRank(tier) < tierRank(open.tier)) {
          throw new ApiError(409, 'STAKE_TIER_LOWER', `You hold a ${open.tier} stake; a stake is raised, never lowered (unstake it after its lock to stake less)`, { current_tier: open.tier });
        }
        const target = stakeUnits(tier);
        const add = target - (open?.units ?? 0);
        if (open && add <= 0) return { created: false, duplicate: true, locked_units: 0, stake: stakeView(open) };
        const stakeId = open?.stake_id ?? newId();
        await ledger.lock(trx, { agentId, stakeId, units: add, now });
        const lockedUntil = now + STAKE_LOCK_MS;
        const appended = await append(trx, 'stake.locked', agentId, now, { stake_id: stakeId, tier, units_added: add, units_total: target, locked_until: lockedUntil });
        let row: StakesTable;
        if (open) {
          row = { ...open, tier, units: target, locked_until: lockedUntil, updated_log_index: appended.index };
          await store.updateStake(trx, stakeId, ['active'], { tier, units: target, locked_until: lockedUntil, updated_log_index: appended.index });
        } else {
          row = {
            stake_id: stakeId, agent_id: agentId, tier, units: target, status: 'active', staked_at: now, locked_until: lockedUntil, cooling_until: null,
            ended_at: null, released_units: null, created_log_index: appended.index, updated_log_index: appended.index,
          };
          await store.insertStake(trx, row);
        }
        return { created: !open, duplicate: false, locked_units: add, stake: stakeView(row) };
      });
    },

    async unstake(agentId: string) {
      const now = clock.now();
      return ledger.withAccounts([agentId], now, async (trx) => {
        await log.lockHeadFor(trx);
        const open = await store.open(agentId, trx);
        if (!open) throw new ApiError(404, 'STAKE_NOT_FOUND', 'You have no stake (or it has ended): nothing to unstake');
        if (open.status === 'cooling') return { duplicate: true, stake: stakeView(open) };
        if (now < open.locked_until) {
          throw new ApiError(409, 'STAKE_LOCKED', `Your stake is locked until ${iso(open.locked_until)} (${STAKE_LOCK_MS / 86_400_000} days after its last lock)`, { locked_until: iso(open.locked_until) });
        }
        const coolingUntil = now + UNSTAKE_COOLING_MS;
        const appended = await append(trx, 'stake.unstake_requested', agentId, now, { stake_id: open.stake_id, cooling_until: coolingUntil });
        await store.updateStake(trx, open.stake_id, ['active'], { status: 'cooling', cooling_until: coolingUntil, updated_log_index: appended.index });
        return { duplicate: false, stake: stakeView({ ...open, status: 'cooling', cooling_until: coolingUntil, updated_log_index: appended.index }) };
      });
    },

    async sponsor(bearer: string, sponsorId: string, wardId: string) {
      if (bearer !== sponsorId) {
        throw new ApiError(403, 'SPONSORSHIP_FORBIDDEN', 'Only the sponsor itself sponsors: the path\'s sponsor_id must be the bearer\'s own agent id', { sponsor_id: sponsorId });
      }
      const [sponsor, ward] = await Promise.all([activeProfile(sponsorId, 'sponsor'), deps.profile(wardId)]);
      if (!ward) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this ward_id');
      const ineligible = (reason: string, message: string) => new ApiError(403, 'SPONSORSHIP_INELIGIBLE', message, { reason });
      if (ward.agentId === sponsor.agentId) throw ineligible('self', 'An agent cannot sponsor itself');
      if (ward.owner === sponsor.owner) throw ineligible('same_owner', 'An agent cannot sponsor an agent of the same owner');
      if (!ward.active || !ward.passportActive) throw ineligible('ward_inactive', 'The ward is suspended or its passport is revoked');
      const now = clock.now();
      return db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const stake = await store.open(sponsorId, trx);
        if (stake?.status !== 'active' || stake.units <= 0) {
          throw new ApiError(403, 'SPONSOR_NOT_STAKED', 'A sponsor must hold an active stake (POST /v1/agents/passport/stake; a cooling stake does not count)');
        }
        const existing = await store.pair(sponsorId, wardId, now, trx);
        if (existing?.revokes_at !== null && existing?.revokes_at !== undefined) {
          throw new ApiError(409, 'SPONSORSHIP_REVOKE_PENDING', `Your sponsorship of this ward is being revoked (in force until ${iso(existing.revokes_at)}); sponsor it again after that`, { revokes_at: iso(existing.revokes_at) });
        }
        if (existing) return { created: false, duplicate: true, sponsorship: sponsorshipView(existing, now), ring: { flagged: existing.ring_flagged_at !== null, sponsorship_ids: [] as string[] } };
        const wards = await store.wardsOf(sponsorId, now, trx);
        if (wards.length >= MAX_ACTIVE_WARDS) {
          throw new ApiError(409, 'SPONSOR_WARD_LIMIT', `A sponsor has at most ${MAX_ACTIVE_WARDS} wards in force (a revoked one counts until its revoke takes effect)`, { max_active_wards: MAX_ACTIVE_WARDS });
        }
        const id = newId();
        const appended = await append(trx, 'sponsorship.created', wardId, now, { sponsorship_id: id, sponsor_agent_id: sponsorId });
        const row: SponsorshipsTable = {
          sponsorship_id: id, sponsor_agent_id: sponsorId, ward_agent_id: wardId, created_at: now, created_log_index: appended.index,
          revoke_requested_at: null, revokes_at: null, revoke_log_index: null, ring_flagged_at: null, ring_log_index: null,
        };
        await store.insertSponsorship(trx, row);
        const ring = await flagRing(trx, sponsorId, now);
        const mine = ring.flagged.has(id) ? { ...row, ring_flagged_at: now, ring_log_index: ring.logIndex } : row;
        return { created: true, duplicate: false, sponsorship: sponsorshipView(mine, now), ring: { flagged: ring.flagged.has(id), sponsorship_ids: [...ring.flagged] } };
      });
    },

    async revokeSponsorship(bearer: string, sponsorId: string, wardId: string) {
      if (bearer !== sponsorId) {
        throw new ApiError(403, 'SPONSORSHIP_FORBIDDEN', 'Only the sponsor itself revokes: the path\'s sponsor_id must be the bearer\'s own agent id', { sponsor_id: sponsorId });
      }
      const now = clock.now();
      return db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const s = await store.pair(sponsorId, wardId, now, trx);
        if (!s) throw new ApiError(404, 'SPONSORSHIP_NOT_FOUND', 'You sponsor no such ward (or the revoke has taken effect)');
        if (s.revokes_at !== null) return { duplicate: true, sponsorship: sponsorshipView(s, now) };
        const revokesAt = now + SPONSOR_REVOKE_GRACE_MS;
        const appended = await append(trx, 'sponsorship.revoked', wardId, now, { sponsorship_id: s.sponsorship_id, sponsor_agent_id: sponsorId, revokes_at: revokesAt });
        const patch = { revoke_requested_at: now, revokes_at: revokesAt, revoke_log_index: appended.index };
        await store.updateSponsorship(trx, s.sponsorship_id, patch);
        return { duplicate: false, sponsorship: sponsorshipView({ ...s, ...patch }, now) };
      });
    },

    async slash(agentId: string, body: { credits: number; reason: string; harmed_agent_id: string }) {
      const requested = credits(body.credits);
      const [agent, harmed] = await Promise.all([deps.profile(agentId), deps.profile(body.harmed_agent_id)]);
      if (!agent) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this agent_id');
      if (!harmed || harmed.agentId === agent.agentId) {
        throw new ApiError(422, 'SLASH_HARMED_AGENT_INVALID', harmed ? 'The harmed agent cannot be the slashed agent' : 'No agent with this harmed_agent_id', { field: 'body.harmed_agent_id' });
      }
      const now = clock.now();
      const sponsors = [...new Set((await store.sponsorsOf(agentId, now)).map((s) => s.sponsor_agent_id))].sort();
      return ledger.withAccounts([agentId, harmed.agentId, ...sponsors], now, async (trx) => {
        await log.lockHeadFor(trx);
        const slashId = newOrderedId();
        const takes = await takeFromStakes(trx, { slashId, agentId, sponsors, requested, harmedAgentId: harmed.agentId, now });
        if (takes.length === 0) throw new ApiError(409, 'NOTHING_TO_SLASH', 'Neither this agent nor a sponsor of it has credit at stake');
        const sum = (k: keyof SlashSplit) => takes.reduce((n, t) => n + t[k], 0);
        const own = takes.find((t) => t.role === 'agent')?.taken ?? 0;
        const data = {
          slash_id: slashId, harmed_agent_id: harmed.agentId, requested_units: requested, reason_sha256: sha256hex(body.reason),
          takes: takes.map((t) => ({ agent_id: t.agentId, role: t.role, stake_id: t.stakeId, taken_units: t.taken, harmed_units: t.harmed, insurance_units: t.insurance, burned_units: t.burned })),
        };
        const appended = await append(trx, 'stake.slashed', agentId, now, data);
        for (const t of takes) {
          const left = t.before - t.taken;
          await store.updateStake(trx, t.stakeId, ['active', 'cooling'], left > 0
            ? { units: left, updated_log_index: appended.index }
            : { units: 0, status: 'slashed', ended_at: now, updated_log_index: appended.index });
        }
        const row: SlashesTable = {
          slash_id: slashId, agent_id: agentId, harmed_agent_id: harmed.agentId, reason: body.reason, requested_units: requested,
          taken_units: sum('taken'), harmed_units: sum('harmed'), insurance_units: sum('insurance'), burned_units: sum('burned'), takes: JSON.stringify(data.takes),
          decided_at: now, log_index: appended.index,
        };
        await store.insertSlash(trx, row);
        return slashView(row, own, takes);
      });
    },
  };

  /**
   * Takes the amount from the agent's open stake (what is there, if less) and a quarter of it from
   * each of its sponsors' open stakes; stakes with nothing in them are left out.
   */
  async function takeFromStakes(trx: Trx, s: { slashId: string; agentId: string; sponsors: string[]; requested: Units; harmedAgentId: string; now: number }) {
    const out: (SlashSplit & { agentId: string; role: 'agent' | 'sponsor'; stakeId: string; before: number })[] = [];
    const parties: { agentId: string; role: 'agent' | 'sponsor'; units: Units }[] = [
      { agentId: s.agentId, role: 'agent', units: s.requested },
      // Sponsors read again under the locks: only those locked (a sponsor added meanwhile is left out).
      ...(await store.sponsorsOf(s.agentId, s.now, trx)).map((sp) => sp.sponsor_agent_id).filter((a, i, all) => s.sponsors.includes(a) && all.indexOf(a) === i)
        .map((a) => ({ agentId: a, role: 'sponsor' as const, units: sponsorShare(s.requested) })),
    ];
    for (const p of parties) {
      const stake = await store.open(p.agentId, trx);
      if (!stake || stake.units <= 0 || p.units <= 0) continue;
      const split = await ledger.slash(trx, { slashId: s.slashId, agentId: p.agentId, stakeId: stake.stake_id, units: p.units, harmedAgentId: s.harmedAgentId, now: s.now });
      if (split.taken > 0) out.push({ ...split, agentId: p.agentId, role: p.role, stakeId: stake.stake_id, before: stake.units });
    }
    return out;
  }

  /** Flags the sponsorships in force on a cycle through `agent` that are not flagged yet, with one log entry. */
  async function flagRing(trx: Trx, agent: string, now: number): Promise<{ flagged: Set<string>; logIndex: number | null }> {
    const ring = await ringThrough(store, trx, agent, now);
    const fresh = ring.filter((e) => e.ring_flagged_at === null);
    if (fresh.length === 0) return { flagged: new Set(), logIndex: null };
    const agents = [...new Set(ring.flatMap((e) => [e.sponsor_agent_id, e.ward_agent_id]))].sort();
    const appended = await append(trx, 'sponsorship.ring_flagged', agent, now, { sponsorship_ids: fresh.map((e) => e.sponsorship_id).sort(), agents });
    for (const e of fresh) await store.updateSponsorship(trx, e.sponsorship_id, { ring_flagged_at: now, ring_log_index: appended.index });
    return { flagged: new Set(fresh.map((e) => e.sponsorship_id)), logIndex: appended.index };
  }
}

function slashView(r: SlashesTable, own: Units, takes: (SlashSplit & { agentId: string; role: string; stakeId: string })[]) {
  return {
    slash_id: r.slash_id, agent_id: r.agent_id, harmed_agent_id: r.harmed_agent_id,
    requested_credits: Number(r.requested_units) / 100,
    credits_taken_usd: formatUsd(r.taken_units),
    // A stake smaller than the amount gives what it has: the rest is not taken.
    shortfall_usd: formatUsd(Number(r.requested_units) - own),
    harmed_credit_usd: formatUsd(r.harmed_units), insurance_usd: formatUsd(r.insurance_units), burned_usd: formatUsd(r.burned_units),
    takes: takes.map((t) => ({
      agent_id: t.agentId, role: t.role, stake_id: t.stakeId, taken_usd: formatUsd(t.taken),
      harmed_usd: formatUsd(t.harmed), insurance_usd: formatUsd(t.insurance), burned_usd: formatUsd(t.burned),
    })),
    decided_at: iso(r.decided_at), log_index: r.log_index,
  };
}

export type StakeService = ReturnType<typeof createStakeService>;
