/**
 * How one charge is decided, inside the transaction holding the agent's account lock: which rule
 * applies (a monthly quota, or a rolling free floor then credit), whether the call passes, and what
 * it writes. An ApiError refuses only this call.
 *
 * The decision uses the agent's in-memory state when its stamp is the one the lock found
 * (meter-state.ts), else reads it. With `held` (the account held by the caller's transaction scope)
 * it decides on the state the earlier charges of that transaction left, and puts the lot and
 * day-counter updates off to the scope's end (held-account.ts).
 */
import type { Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import { formatUsd, parseUsd, type Units } from '../../lib/money';
import { effectiveTier, type TierDefinition } from '../../lib/tiers';
import { utcDay } from '../../lib/utc';
import type { LockedAccount } from './account';
import { figures } from './figures';
import type { Held } from './held-account';
import { keep, type Decided, type Job, type MeterCore } from './meter-core';
import { holdsOf, monthCalls, queueOf } from './meter-reads';
import { heldUnits, summarize, type Lot } from './meter-sql';
import { pickSlot, useSlot, type MeterState } from './meter-state';
import { ACTION_POOL, ACTION_PRICE, FLOOR_WINDOW_MS, FREE_FLOORS, limitCode, monthlyQuota, type Pool } from './pricing';

/** One decision in progress: the job, the lock it is made under, and the state it is made on. */
interface Deciding {
  core: MeterCore;
  trx: Transaction<Database>;
  job: Job;
  account: LockedAccount;
  state: MeterState;
  lots: Lot[];
  held?: Held;
  /** Decide only (`check`): nothing is written and nothing given. */
  dryRun: boolean;
}

/**
 * Decides one charge under `account`'s lock and writes its rows; a dry run (`check`) only decides.
 * Resolves to the decision (undefined for a dry run), or throws the refusal.
 */
export async function decide(core: MeterCore, trx: Transaction<Database>, job: Job, account: LockedAccount, dryRun = false,
  held?: Held): Promise<Decided | undefined> {
  const tier = effectiveTier(job.tier, account.lifetime_purchase_units);
  const pool = ACTION_POOL[job.action];
  // The held state, not the bounded cache's copy: evicted mid-transaction, that copy would be
  // reloaded without this transaction's put-off draws.
  const state = held?.state ?? core.states.take(job.agentId, account.prev_stamp);
  if (held) held.state = state;
  // Each read below is awaited only when it is one: what the state holds is used as it is.
  const lots = state.lots ?? (state.lots = await core.m.lots(trx, job.agentId, job.now));
  const d: Deciding = { core, trx, job, account, state, lots, held, dryRun };
  const price = tier.metering === 'monthly' || pool === 'parse' ? await quotaPrice(d, tier, pool) : await floorPrice(d, pool);
  if (dryRun) {
    keep(core, job.agentId, state, account);
    return undefined;
  }
  return record(d, tier, pool, price);
}

/**
 * A monthly quota (legacy tiers, and parse on every tier): free within it; past it a search pays
 * the tier's overage from credit, any other pool is refused with its 429 code. Null: free.
 */
async function quotaPrice(d: Deciding, tier: TierDefinition, pool: Pool): Promise<Units | null> {
  const { core, trx, job, state } = d;
  const quota = monthlyQuota(tier, pool);
  if (quota === null) return null;
  const used = await monthCalls(core.m, trx, job.agentId, state, pool, job.now, d.held);
  if (used < quota) return null;
  const overage = pool === 'search' && tier.searchOverageUsdPerCall ? parseUsd(tier.searchOverageUsdPerCall) : 0;
  const aside = overage === 0 ? 0 : heldUnits(state.holds ?? (await holdsOf(core.m, trx, job.agentId, state)), job.now);
  if (overage !== 0 && summarize(d.lots, job.now).units - aside >= overage) return overage;
  keep(core, job.agentId, state, d.account);
  const l = limitCode[pool];
  throw new ApiError(l.status, l.code, `Monthly ${l.what} quota of ${quota} for tier ${tier.name} is used up for this UTC month` +
    (overage ? '; the search overage is paid from credit and the balance is too low' : ''), { upgrade_url: core.deps.upgradeUrl, limit: quota });
}

/**
 * A rolling free floor (credit tiers): a free slot if one is due (taken here unless a dry run),
 * else the action's price, which the credit must pay. Null: free.
 */
async function floorPrice(d: Deciding, pool: Pool): Promise<Units | null> {
  const { core, trx, job, state } = d;
  const floor = FREE_FLOORS[pool]!;
  const loaded = queueOf(core.m, trx, job.agentId, state, pool);
  const q = loaded instanceof Promise ? await loaded : loaded;
  const pick = pickSlot(q, floor, job.now, FLOOR_WINDOW_MS);
  if (pick && d.dryRun) return null; // passes; nothing to write
  if (pick) {
    state.stamp = null; // changing: never reused unless this charge completes
    await (pick.reuse ? core.m.reuseSlot : core.m.newSlot)(trx, { agentId: job.agentId, pool, slot: pick.slot, now: job.now, chargeId: job.chargeId });
    useSlot(q, pick, job.now);
    return null;
  }
  const price = ACTION_PRICE[job.action];
  await ensureCredit(d, pool, floor, price);
  return price;
}

/** Refuses with 402 INSUFFICIENT_CREDITS unless the credit no live hold sets aside pays `cost`. */
async function ensureCredit(d: Deciding, pool: Pool, floor: number, cost: Units): Promise<void> {
  const { core, trx, job, state } = d;
  const units = summarize(d.lots, job.now).units;
  // Credit that live holds set aside (leases.ts) answers only their own instance's calls.
  let aside = heldUnits(state.holds ?? (await holdsOf(core.m, trx, job.agentId, state)), job.now);
  // What this instance's own leases hold unused pays the call rather than a refusal.
  const short = cost - (units - aside);
  if (short > 0 && core.leases) aside -= d.dryRun ? core.leases.spare(job.agentId) : await core.leases.yieldTo(trx, job.agentId, state, short);
  if (units - aside >= cost) return;
  keep(core, job.agentId, state, d.account);
  throw new ApiError(402, 'INSUFFICIENT_CREDITS',
    `The free floor of ${floor} ${pool} calls per rolling 30 days is used up and ${job.action} costs ${formatUsd(cost)} USD; the balance is ${formatUsd(units)} USD` +
    (aside > 0 ? `, of which ${formatUsd(aside)} USD is held for calls being answered by this or another svc instance (released within seconds)` : '') +
    '. Buy credits with POST /v1/billing/credits/checkout and pay on the billing page (upgrade_url).',
    { upgrade_url: core.deps.upgradeUrl, price_usd: formatUsd(cost), credits_remaining_usd: formatUsd(units) });
}

/** Writes a passed charge: its spend (a paid call), its count, and the figures it answers with. */
async function record(d: Deciding, tier: TierDefinition, pool: Pool, price: Units | null): Promise<Decided> {
  const { core, trx, job, account, state, held } = d;
  const day = utcDay(job.now);
  const cost = price ?? 0;
  state.stamp = null;
  let spendEntries: string[] = [];
  if (cost > 0) {
    const spent = core.m.spend(trx, d.lots, { agentId: job.agentId, units: cost, action: job.action, chargeId: job.chargeId, now: job.now }, held?.defer);
    spendEntries = spent instanceof Promise ? await spent : spent;
  }
  if (held) countLater(held, pool, day);
  else await core.m.bumpDaily(trx, job.agentId, pool, day, 1);
  const counted = state.months.get(pool);
  if (counted?.day === day) counted.n++;
  else if (counted) state.months.delete(pool);
  const f = await figures(core, trx, job.agentId, state, job.tier, account, pool, job.now, held);
  keep(core, job.agentId, state, account);
  return {
    day,
    spendEntries,
    figures: f,
    charge: { chargeId: job.chargeId, agentId: job.agentId, action: job.action, pool, free: price === null, costUnits: cost, tier: tier.name, poolCounts: f.poolCounts },
    usage: f.usage,
  };
}

/** One call of `pool` on `day`, added to the day counter when the held account's scope ends. */
function countLater(held: Held, pool: Pool, day: string): void {
  const k = `${pool} ${day}`;
  const b = held.bumps.get(k);
  if (b) b.n++;
  else held.bumps.set(k, { pool, day, n: 1 });
}
