/**
 * GET /v1/usage: metered calls this UTC month, what is left, and a 7-day daily breakdown.
 *
 * calls_this_month  metered calls of every pool (search incl. blob search, browse, memory writes,
 *                   parse) since the start of the current UTC month.
 * calls_remaining   legacy monthly tiers: the sum, over pools with a finite monthly quota, of what
 *                   is left of it this month; credit-metered tiers: null (past the free floors calls
 *                   are paid from credit, as in the search `usage` object). `pools` has the detail,
 *                   including each tier's monthly caps (the free tier's 1,000 memory writes).
 * daily             exactly 7 elements, oldest first, ending with today (UTC):
 *                   { date: 'YYYY-MM-DD', calls, search, browse, memory_write, parse }; calls is the
 *                   sum of the four; days without calls are present with zeros.
 */
import type { TierDefinition } from '../../lib/tiers';
import { METERED_POOLS, type DailyCount, type MeterReadings, type MeterTerms, type MeteredPool } from './ports';
import { DAY_MS, utcDay, utcMonth, utcMonthStartDay } from '../../lib/utc';
import { formatUnitsUsd } from './time';

export interface DailyUsage { date: string; calls: number; search: number; browse: number; memory_write: number; parse: number }

export interface PoolUsage {
  calls_this_month: number;
  monthly_limit: number | null;
  remaining_this_month: number | null;
  free_floor_30d: number | null;
  free_remaining_30d: number | null;
}

function monthlyLimit(t: TierDefinition, pool: MeteredPool): number | null {
  if (pool === 'parse') return t.parseOpsPerMonth; // parse has a monthly quota on every tier
  if (pool === 'memory_write') return t.memoryWritesPerMonth; // a cap on credit tiers too (free: 1,000 per UTC month)
  if (t.metering !== 'monthly') return null;
  return pool === 'search' ? t.searchPerMonth : pool === 'browse' ? t.browsePerMonth : t.memoryWritesPerMonth;
}

/** 7 elements, oldest first, ending today; zeros where there were no calls. */
export function dailyBreakdown(rows: DailyCount[], now: number): DailyUsage[] {
  const out: DailyUsage[] = [];
  for (let i = 6; i >= 0; i--) {
    const date = utcDay(now - i * DAY_MS);
    const d: DailyUsage = { date, calls: 0, search: 0, browse: 0, memory_write: 0, parse: 0 };
    for (const r of rows) {
      if (r.day !== date || !(METERED_POOLS as readonly string[]).includes(r.pool)) continue;
      d[r.pool as MeteredPool] += r.count;
      d.calls += r.count;
    }
    out.push(d);
  }
  return out;
}

export async function usageHistory(r: MeterReadings, terms: MeterTerms, a: { agentId: string; storedTier: string; now: number }) {
  const { agentId, now } = a;
  const today = utcDay(now);
  const weekStart = utcDay(now - 6 * DAY_MS);
  const monthStart = utcMonthStartDay(now);
  const from = weekStart < monthStart ? weekStart : monthStart;
  const [tier, rows, balance, staked] = await Promise.all([
    r.effectiveTier(agentId, a.storedTier), r.daily(agentId, from, today), r.balanceUnits(agentId), r.stakedUnits?.(agentId) ?? 0,
  ]);
  const credit = tier.metering === 'credits';
  const freeUsed = credit
    ? await Promise.all(METERED_POOLS.map((p) => (terms.freeFloor[p] === null ? Promise.resolve(0) : r.freeUsed(agentId, p))))
    : METERED_POOLS.map(() => 0);

  const pools = {} as Record<MeteredPool, PoolUsage>;
  let callsThisMonth = 0;
  let remaining: number | null = null;
  METERED_POOLS.forEach((pool, i) => {
    const used = rows.filter((d) => d.pool === pool && d.day >= monthStart).reduce((n, d) => n + d.count, 0);
    callsThisMonth += used;
    const limit = monthlyLimit(tier, pool);
    const left = limit === null ? null : Math.max(0, limit - used);
    const floor = credit ? terms.freeFloor[pool] : null;
    pools[pool] = {
      calls_this_month: used, monthly_limit: limit, remaining_this_month: left,
      free_floor_30d: floor, free_remaining_30d: floor === null ? null : Math.max(0, floor - freeUsed[i]),
    };
    if (!credit && left !== null) remaining = (remaining ?? 0) + left;
  });

  return {
    status: 'success',
    tier: tier.name,
    metering: tier.metering,
    month: utcMonth(now),
    calls_this_month: callsThisMonth,
    calls_remaining: remaining,
    credits_remaining_usd: formatUnitsUsd(balance),
    credits_staked_usd: formatUnitsUsd(staked),
    pools,
    daily: dailyBreakdown(rows, now),
  };
}
