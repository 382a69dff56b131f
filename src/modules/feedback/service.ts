/**
 * Feedback: append-only events on earlier results, capped per agent and UTC calendar month by tier
 * (src/lib/tiers.ts feedbackPerMonth), and rolling 7/30-day statistics.
 */
import { DAY_MS } from '../../lib/utc';
import { ApiError } from '../../http/errors';
import type { Clock } from '../../lib/clock';
import { iso } from '../../lib/clock';
import { newId } from '../../lib/ids';
import { tierOf, type TierDefinition } from '../../lib/tiers';
import type { ActivityItem, ActivitySource } from '../usage/activity-types';
import { capMonth, capReached, capStanding } from '../usage/monthly-cap';
import { MAX_NOTE_CHARS, REF_TYPES, SIGNALS, type RefType, type Signal } from './schemas';
import type { FeedbackRow, FeedbackStore } from './store';
import { isBlank } from '../../lib/text';

export interface FeedbackInput { ref_type: RefType; ref_id: string; signal: Signal; note?: string | null }
export interface Caller { agentId: string; tier: string }

type Counts = Record<Signal | 'total', number>;
const zero = (): Counts => ({ total: 0, helpful: 0, unhelpful: 0, wrong: 0 });

export interface FeedbackServiceDeps {
  store: FeedbackStore;
  clock: Clock;
  upgradeUrl: string;
  /** The tier the agent is billed on (purchases raise it); the stored tier when absent. */
  effectiveTier?: (agentId: string, storedTier: string) => Promise<TierDefinition>;
}

export function createFeedbackService(deps: FeedbackServiceDeps) {
  const { store, clock } = deps;
  const capOf = async (c: Caller) => (deps.effectiveTier ? await deps.effectiveTier(c.agentId, c.tier) : tierOf(c.tier)).feedbackPerMonth;

  return {
    async submit(caller: Caller, input: FeedbackInput) {
      if (isBlank(input.ref_id)) throw new ApiError(422, 'INVALID_REF_ID', 'ref_id must not be empty, whitespace or control characters only', { field: 'body.ref_id' });
      const note = input.note ?? null;
      if (note !== null && [...note].length > MAX_NOTE_CHARS) {
        throw new ApiError(422, 'NOTE_TOO_LONG', `note is at most ${MAX_NOTE_CHARS} characters`, { field: 'body.note', max_chars: MAX_NOTE_CHARS });
      }
      const now = clock.now();
      const cap = await capOf(caller);
      const { month } = capMonth(now);
      const row: FeedbackRow = {
        feedback_id: newId(), agent_id: caller.agentId, ref_type: input.ref_type, ref_id: input.ref_id,
        signal: input.signal, note: note === '' ? null : note, created_at: now,
      };
      if (!(await store.appendWithinCap(row, month, cap))) {
        throw capReached('FEEDBACK_LIMIT', 'feedback', cap, now, deps.upgradeUrl);
      }
      return { feedback_id: row.feedback_id, created_at: iso(now) };
    },

    async stats(caller: Caller) {
      const now = clock.now();
      const rows = await store.signalCounts(caller.agentId, now - 7 * DAY_MS, now - 30 * DAY_MS, now);
      const last7 = zero();
      const last30 = zero();
      const byRef: Record<string, Counts> = Object.fromEntries(REF_TYPES.map((r) => [r, zero()]));
      for (const r of rows) {
        if (!(SIGNALS as readonly string[]).includes(r.signal)) continue;
        const s = r.signal as Signal;
        last7[s] += r.last_7d; last7.total += r.last_7d;
        last30[s] += r.last_30d; last30.total += r.last_30d;
        const ref = (byRef[r.ref_type] ??= zero());
        ref[s] += r.last_30d; ref.total += r.last_30d;
      }
      const [limit, used] = await Promise.all([capOf(caller), store.monthCount(caller.agentId, capMonth(now).month)]);
      return {
        status: 'success',
        last_7d: last7,
        last_30d: last30,
        by_ref_type: byRef,
        by_ref_type_window: 'last_30d',
        ...capStanding(limit, used, now),
      };
    },

    /** The feed's view of feedback events. */
    activitySource(): ActivitySource {
      return {
        kind: 'feedback',
        async page(agentId, limit, before): Promise<ActivityItem[]> {
          const rows = await store.page(agentId, limit, before);
          return rows.map((r) => ({
            kind: 'feedback', id: r.feedback_id, at: Number(r.created_at),
            data: { feedback_id: r.feedback_id, ref_type: r.ref_type, ref_id: r.ref_id, signal: r.signal, note: r.note },
          }));
        },
      };
    },
  };
}

export type FeedbackService = ReturnType<typeof createFeedbackService>;
