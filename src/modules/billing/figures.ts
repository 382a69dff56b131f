/**
 * What a charge answers besides its decision: `_svc.usage` (less the commons part), the balance, and
 * for the search pool its counts, as the agent's state stands under the account lock with the
 * charges of this transaction included. The calls this instance's credit leases answered and have
 * not written yet are the agent's too: they are taken off here, and the leases are given the new
 * figures to answer from (leases.ts `refresh`).
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { iso } from '../../lib/clock';
import { formatUsd } from '../../lib/money';
import { effectiveTier, type TierDefinition } from '../../lib/tiers';
import type { LockedAccount } from './account';
import type { Held } from './held-account';
import type { Lease } from './leases';
import type { MeterCore } from './meter-core';
import { monthCalls, queueOf } from './meter-reads';
import { summarize, type MeterSql } from './meter-sql';
import { usedInWindow, type MeterState, type SlotQueue } from './meter-state';
import type { Figures, PoolCounts } from './metering-contract';
import { FLOOR_WINDOW_MS, FREE_FLOORS, monthlyBrowseLeft, type Pool } from './pricing';

type Trx = Transaction<Database>;

/**
 * The figures as `state` stands under `account`'s lock (the charges of this transaction included),
 * less the unwritten calls of this instance's leases but `except`'s.
 */
export async function figures(core: MeterCore, trx: Trx, agentId: string, state: MeterState, storedTier: string, account: LockedAccount,
  pool: Pool, now: number, held?: Held, except?: Lease): Promise<Figures> {
  const { m, leases } = core;
  const tier = effectiveTier(storedTier, account.lifetime_purchase_units);
  const after = summarize(state.lots!, now);
  const unwritten = leases?.unwritten(agentId, pool, except);
  if (unwritten) after.units -= unwritten.units;
  let poolCounts: PoolCounts | undefined;
  if (pool === 'search') {
    const counts = searchCounts(m, trx, agentId, state, now, held, unwritten?.calls ?? 0);
    poolCounts = counts instanceof Promise ? await counts : counts;
  }
  const staked = state.staked ?? (state.staked = await m.staked(trx, agentId));
  const left = browseLeft(m, trx, agentId, state, tier, now, held);
  const f: Figures = {
    balanceUnits: after.units,
    poolCounts,
    usage: {
      credits_remaining_usd: formatUsd(after.units),
      credits_staked_usd: formatUsd(staked),
      tier_label: tier.label,
      auto_topup: account.auto_topup_enabled === 1,
      credits_expire_at: after.earliestExpiry === null ? null : iso(after.earliestExpiry),
      browse_calls_remaining: left instanceof Promise ? await left : left,
    },
  };
  leases?.refresh(agentId, pool, f, except);
  return f;
}

/** The search pool's calls this month (with `unwrittenCalls`) and free calls used in the rolling window. */
function searchCounts(m: MeterSql, trx: Trx, agentId: string, state: MeterState, now: number, held: Held | undefined,
  unwrittenCalls: number): PoolCounts | Promise<PoolCounts> {
  const counts = (n: number, q: SlotQueue): PoolCounts => ({ callsThisMonth: n + unwrittenCalls, freeUsedInWindow: usedInWindow(q, now, FLOOR_WINDOW_MS) });
  const month = monthCalls(m, trx, agentId, state, 'search', now, held);
  if (month instanceof Promise) return month.then(async (n) => counts(n, await queueOf(m, trx, agentId, state, 'search')));
  const q = queueOf(m, trx, agentId, state, 'search');
  return q instanceof Promise ? q.then((loaded) => counts(month, loaded)) : counts(month, q);
}

/** Browse calls left: the monthly quota's rest on a legacy tier, else the free browse floor's. */
function browseLeft(m: MeterSql, trx: Trx, agentId: string, state: MeterState, tier: TierDefinition, now: number,
  held: Held | undefined): number | null | Promise<number | null> {
  if (tier.metering === 'monthly') {
    if (tier.browsePerMonth === null) return monthlyBrowseLeft(tier, 0);
    const n = monthCalls(m, trx, agentId, state, 'browse', now, held);
    return n instanceof Promise ? n.then((c) => monthlyBrowseLeft(tier, c)) : monthlyBrowseLeft(tier, n);
  }
  const floorLeft = (q: SlotQueue) => FREE_FLOORS.browse! - usedInWindow(q, now, FLOOR_WINDOW_MS);
  const q = queueOf(m, trx, agentId, state, 'browse');
  return q instanceof Promise ? q.then(floorLeft) : floorLeft(q);
}
