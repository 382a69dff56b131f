/**
 * Human-approval events: what an agent reports a human approved or denied (e.g. before a tool call
 * of risk class high). Append-only, declared by the agent and not verified (like a tool passport's risk_class),
 * capped per agent and UTC calendar month by tier (src/lib/tiers.ts approvalEventsPerMonth), listed
 * newest first, and shown in the agent's activity feed as kind `approval`.
 */
import { ApiError } from '../../http/errors';
import type { Clock } from '../../lib/clock';
import { iso } from '../../lib/clock';
import { newId } from '../../lib/ids';
import { parseIsoInstant } from '../../lib/iso-time';
import { tierOf, type TierDefinition } from '../../lib/tiers';
import { boundFor, decodeCursor, encodeCursor } from '../usage/activity';
import type { ActivityItem, ActivitySource } from '../usage/activity-types';
import { capMonth, capReached, capStanding } from '../usage/monthly-cap';
import { DECIDED_AT_SKEW_MS, MAX_NOTE_CHARS, type Decision } from './schemas';
import type { ApprovalRow, ApprovalStore } from './store';
import { isBlank } from '../../lib/text';

export interface ApprovalInput {
  action: string; decision: Decision; approver?: string | null; tool?: string | null;
  risk_class?: 'low' | 'high' | null; note?: string | null; decided_at?: string | null;
}
export interface Caller { agentId: string; tier: string }

const view = (r: ApprovalRow) => ({
  approval_id: r.approval_id, action: r.action, decision: r.decision, approver: r.approver, tool: r.tool,
  risk_class: r.risk_class, note: r.note, decided_at: iso(r.decided_at), created_at: iso(r.created_at),
});

export interface ApprovalServiceDeps {
  store: ApprovalStore;
  clock: Clock;
  upgradeUrl: string;
  /** The tier the agent is billed on (purchases raise it); the stored tier when absent. */
  effectiveTier?: (agentId: string, storedTier: string) => Promise<TierDefinition>;
}

export function createApprovalService(deps: ApprovalServiceDeps) {
  const { store, clock } = deps;
  const capOf = async (c: Caller) => (deps.effectiveTier ? await deps.effectiveTier(c.agentId, c.tier) : tierOf(c.tier)).approvalEventsPerMonth;

  return {
    async record(caller: Caller, input: ApprovalInput) {
      if (isBlank(input.action)) {
        throw new ApiError(422, 'INVALID_APPROVAL_ACTION', 'action must not be empty or whitespace', { field: 'body.action' });
      }
      const note = input.note ?? null;
      if (note !== null && [...note].length > MAX_NOTE_CHARS) {
        throw new ApiError(422, 'NOTE_TOO_LONG', `note is at most ${MAX_NOTE_CHARS} characters`, { field: 'body.note', max_chars: MAX_NOTE_CHARS });
      }
      const now = clock.now();
      let decidedAt = now;
      if (input.decided_at !== undefined && input.decided_at !== null) {
        const at = parseIsoInstant(input.decided_at);
        if (at === undefined || at < 0) {
          throw new ApiError(422, 'INVALID_DECIDED_AT', 'decided_at is an ISO 8601 date-time with a time zone, e.g. 2026-11-26T09:30:00Z', { field: 'body.decided_at' });
        }
        if (at > now + DECIDED_AT_SKEW_MS) {
          throw new ApiError(422, 'INVALID_DECIDED_AT', `decided_at is in the future (server time ${iso(now)})`, { field: 'body.decided_at' });
        }
        decidedAt = at;
      }
      const cap = await capOf(caller);
      const { month } = capMonth(now);
      const row: ApprovalRow = {
        approval_id: newId(), agent_id: caller.agentId, action: input.action, decision: input.decision,
        approver: input.approver ?? null, tool: input.tool ?? null, risk_class: input.risk_class ?? null,
        note: note === '' ? null : note, decided_at: decidedAt, created_at: now,
      };
      if (!(await store.appendWithinCap(row, month, cap))) {
        throw capReached('APPROVAL_EVENTS_LIMIT', 'approval events', cap, now, deps.upgradeUrl);
      }
      return view(row);
    },

    /** Newest first; `cursor` is the next_cursor of the previous page (the activity feed's format). */
    async list(caller: Caller, q: { limit: number; cursor?: string; decision?: Decision }) {
      let before;
      if (q.cursor) {
        let c;
        try {
          c = decodeCursor(q.cursor);
        } catch {
          c = undefined;
        }
        if (!c || c.kind !== 'approval') {
          throw new ApiError(400, 'INVALID_APPROVAL_CURSOR', 'cursor is not one this list handed out; start again without it', { field: 'querystring.cursor' });
        }
        before = boundFor('approval', c);
      }
      const rows = await store.page(caller.agentId, q.limit + 1, before, q.decision);
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      const hasMore = rows.length > q.limit;
      const now = clock.now();
      const [limit, used] = await Promise.all([capOf(caller), store.monthCount(caller.agentId, capMonth(now).month)]);
      return {
        status: 'success',
        events: page.map(view),
        has_more: hasMore,
        next_cursor: hasMore && last ? encodeCursor({ at: last.created_at, kind: 'approval', id: last.approval_id }) : null,
        ...capStanding(limit, used, now),
      };
    },

    /** The feed's view of approval events (ordered by when they were recorded). */
    activitySource(): ActivitySource {
      return {
        kind: 'approval',
        async page(agentId, limit, before): Promise<ActivityItem[]> {
          const rows = await store.page(agentId, limit, before);
          return rows.map((r) => {
            const { approval_id, action, decision, approver, tool, risk_class, note, decided_at } = view(r);
            return { kind: 'approval', id: r.approval_id, at: r.created_at, data: { approval_id, action, decision, approver, tool, risk_class, note, decided_at } };
          });
        },
      };
    },
  };
}

export type ApprovalService = ReturnType<typeof createApprovalService>;
