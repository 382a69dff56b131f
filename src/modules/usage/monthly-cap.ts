/**
 * A per-agent cap per UTC calendar month (feedback events, approval events): the month an instant
 * falls in, how the answers show the agent's standing, and the 429 once it is reached. The count
 * itself is kept in the store's transaction (src/infra/db/monthly-cap.ts).
 */
import { ApiError } from '../../http/errors';
import { iso } from '../../lib/clock';
import { utcMonth } from '../../lib/utc';

/** UTC calendar month of an instant ('YYYY-MM'), and the instant the next one starts. */
export function capMonth(ms: number): { month: string; resetsAt: number } {
  const d = new Date(ms);
  return { month: utcMonth(ms), resetsAt: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/** The fields the stats and list answers carry about this month's cap. */
export function capStanding(limit: number, used: number, now: number) {
  const { month, resetsAt } = capMonth(now);
  return { month, used_this_month: used, limit, remaining: Math.max(0, limit - used), resets_at: iso(resetsAt) };
}

/** 429 `code`: the month's cap of `what` for the agent's tier is reached. */
export function capReached(code: string, what: string, cap: number, now: number, upgradeUrl: string): ApiError {
  return new ApiError(429, code, `Monthly ${what} cap of ${cap} for this tier is reached; it resets at the start of the next UTC month`,
    { upgrade_url: upgradeUrl, limit: cap, resets_at: iso(capMonth(now).resetsAt) });
}
