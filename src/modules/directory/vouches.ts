/**
 * Skill vouching: an agent vouches for a skill another agent lists (not itself, not an agent of its
 * owner), one active vouch per (voucher, target, skill), revocable. Each vouch and revocation is a
 * trust log entry; `skill_vouches` on the passport counts the target's current epoch.
 */
import type { Kysely } from 'kysely';
import { ApiError } from '../../http/errors';
import { isUniqueViolation } from '../../infra/db/dialect';
import type { Database } from '../../infra/db/schema';
import type { VouchesTable } from '../../infra/db/tables/trust';
import { iso, type Clock } from '../../lib/clock';
import { newId } from '../../lib/ids';
import { raterWeight } from '../reputation/model';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import type { VouchStore } from './vouch-store';

/** What vouching needs to know of an agent (from identity). */
export interface VouchProfile {
  agentId: string;
  owner: string;
  active: boolean;
  passportActive: boolean;
  trustLevels: string[];
  skills: string[];
}

export interface SkillVouches { [skill: string]: { count: number; raw_count: number; weighted_count: number } }

export function createVouchService(deps: {
  db: Kysely<Database>; store: VouchStore; log: TrustLog; epochs: Epochs; clock: Clock;
  profile: (agentId: string) => Promise<VouchProfile | undefined>;
}) {
  const { db, store, log, epochs, clock } = deps;

  const view = (v: VouchesTable) => ({
    vouch_id: v.vouch_id, target_agent_id: v.target_agent_id, voucher_agent_id: v.voucher_agent_id, skill: v.skill, epoch: v.epoch,
    voucher_weight: v.weight, created_at: iso(Number(v.created_at)), log_index: Number(v.created_log_index),
    revoked_at: v.revoked_at === null ? null : iso(Number(v.revoked_at)),
  });

  async function parties(voucherId: string, targetId: string) {
    const [voucher, target] = await Promise.all([deps.profile(voucherId), deps.profile(targetId)]);
    if (!target) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this target_agent_id');
    if (!voucher || !voucher.active || !voucher.passportActive) {
      throw new ApiError(403, 'PASSPORT_REVOKED', 'Your passport is revoked or your agent is not active: it cannot vouch');
    }
    return { voucher, target };
  }

  return {
    async vouch(voucherId: string, targetId: string, skill: string) {
      const { voucher, target } = await parties(voucherId, targetId);
      const ineligible = (reason: string, message: string) => new ApiError(403, 'VOUCH_INELIGIBLE', message, { reason });
      if (target.agentId === voucher.agentId) throw ineligible('self', 'An agent cannot vouch for itself');
      if (target.owner === voucher.owner) throw ineligible('same_owner', 'An agent cannot vouch for an agent of the same owner');
      if (!target.active || !target.passportActive) throw ineligible('target_inactive', 'The target is suspended or its passport is revoked');
      if (!target.skills.includes(skill)) {
        throw new ApiError(422, 'VOUCH_SKILL_NOT_LISTED', 'The target does not list this skill; a vouch applies only to a skill the target lists', { skills: target.skills });
      }
      const existing = await store.active(voucher.agentId, target.agentId, skill);
      if (existing) return { created: false, vouch: view(existing) };
      const now = clock.now();
      try {
        return await db.transaction().execute(async (trx) => {
          const epoch = await epochs.current(target.agentId, trx);
          const row: VouchesTable = {
            vouch_id: newId(), target_agent_id: target.agentId, voucher_agent_id: voucher.agentId, skill, epoch,
            weight: raterWeight(voucher.trustLevels), created_at: now, created_log_index: 0, revoked_at: null, revoked_log_index: null,
          };
          const appended = await log.append(trx, {
            kind: 'vouch.given', agentId: target.agentId, epoch, at: now,
            data: { vouch_id: row.vouch_id, voucher_agent_id: voucher.agentId, skill, voucher_weight: row.weight },
          });
          row.created_log_index = appended.index;
          await store.insert(trx, row);
          return { created: true, vouch: view(row) };
        });
      } catch (e) {
        // The same vouch from two requests at once: the first stands.
        if (!isUniqueViolation(e)) throw e;
        const first = await store.active(voucher.agentId, target.agentId, skill);
        if (!first) throw e;
        return { created: false, vouch: view(first) };
      }
    },

    async revoke(voucherId: string, targetId: string, skill: string) {
      const { voucher, target } = await parties(voucherId, targetId);
      const now = clock.now();
      return db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const v = await store.active(voucher.agentId, target.agentId, skill, trx);
        if (!v) throw new ApiError(404, 'VOUCH_NOT_FOUND', 'You have no active vouch for this skill of this agent');
        const appended = await log.append(trx, {
          kind: 'vouch.revoked', agentId: target.agentId, epoch: v.epoch, at: now,
          data: { vouch_id: v.vouch_id, voucher_agent_id: voucher.agentId, skill },
        });
        await store.revoke(trx, v.vouch_id, now, appended.index);
        return { ...view(v), revoked_at: iso(now), revoked_log_index: appended.index };
      });
    },

    /** The passport's skill_vouches: every listed skill, with the active vouches of the current epoch. */
    async skillVouches(agentId: string, listedSkills: string[]): Promise<SkillVouches> {
      const epoch = await epochs.current(agentId);
      const counts = await store.perSkill(agentId, epoch);
      const out: SkillVouches = {};
      for (const skill of listedSkills) {
        const c = counts.find((x) => x.skill === skill);
        out[skill] = { count: c?.count ?? 0, raw_count: c?.count ?? 0, weighted_count: Number((c?.weighted ?? 0).toFixed(6)) };
      }
      return out;
    },
  };
}

export type VouchService = ReturnType<typeof createVouchService>;
