/**
 * The metering service: every metered route calls `charge(agentId, action)` once, before doing the
 * work, and `refund()` on the returned charge if the work then fails.
 *
 * Credit-metered tiers (free, spark, sprint, mission, deploy): a call is free while the agent has
 * used fewer than the floor's free calls in the last 30 days (rolling, no calendar reset); past it the
 * action's price is drawn from credit, or 402 INSUFFICIENT_CREDITS. Legacy monthly tiers (starter,
 * pro): UTC-month quotas; searches past the quota pay the tier's overage rate from credit, other
 * pools refuse with their 429 code. Parse uses the tier's monthly parse quota on every tier.
 *
 * Exact under concurrency: each charge is decided inside a transaction holding the agent's account
 * lock (see store.ts); charges are group-committed (charge-batch.ts) so the lock and commit are shared.
 * The parts: decide.ts (one decision), figures.ts (what a charge answers), meter-reads.ts (the state
 * read from the database), charge-batch.ts (`charge()`'s transactions), leases.ts (paid calls
 * answered from credit held aside), topup-dip.ts (auto top-up's trigger). docs/billing.md tells the design.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { scopeOf } from '../../infra/db/trx-scope';
import { iso } from '../../lib/clock';
import { newOrderedId } from '../../lib/ids';
import { formatUsd } from '../../lib/money';
import { effectiveTier, tierOf } from '../../lib/tiers';
import { emptyAccount, type LockedAccount } from './account';
import { createChargeBatch, createHeldSlot } from './charge-batch';
import { decide } from './decide';
import { figures } from './figures';
import { holdAccount, type Held } from './held-account';
import { createLeases, type Leases } from './leases';
import { keep, type Decided, type Job, type MeterCore } from './meter-core';
import { browseRemaining, loadState } from './meter-reads';
import { heldUnits, summarize } from './meter-sql';
import { createMeterStates, pickSlot } from './meter-state';
import { bumpDaily, releaseFreeSlot } from './meter-store';
import { refundCharge } from './ledger-store';
import { ACTION_POOL, ACTION_PRICE, FLOOR_WINDOW_MS, FREE_FLOORS, type MeteredAction } from './pricing';
import { mayDip, markDip } from './topup-dip';
import type { Charge, ChargeOptions, ChargeReceipt, ChargeWithin, Metering, MeteringDeps, UsageSnapshot } from './metering-contract';

export type { MeteredAction } from './pricing';
export type {
  AgentTierPort, Charge, ChargeOptions, ChargeReceipt, ChargeWithin, CommonsStatsPort, LowBalance, Metering, MeteringDeps, PoolCounts, UsageSnapshot,
} from './metering-contract';

type Batch = ReturnType<typeof createChargeBatch>;

export function createMetering(deps: MeteringDeps): Metering {
  const m = deps.store.sql;
  const states = createMeterStates();
  const core: MeterCore = { deps, m, states, heldSlot: createHeldSlot(m, states) };
  core.leases = leasesFor(core);
  const batch = createChargeBatch(core);
  return {
    charge: (agentId, action, opts) => charge(core, batch, agentId, action, opts),
    chargeWithin: (trx, agentId, action, opts) => chargeWithin(core, trx, agentId, action, opts),
    check: (agentId, action, opts) => check(core, agentId, action, opts),
    refund: (c) => c.refund(),
    async refundReceipt(trx, receipt) {
      await m.lock(trx, receipt.agent_id, deps.clock.now());
      await giveBack(core, trx, receipt);
    },
    async settle(agentId) {
      await core.leases?.settle(agentId);
    },
    async close() {
      await core.leases?.close();
    },
    usage: (agentId, opts) => usage(core, agentId, opts),
  };
}

/** Paid calls decided in memory from credit held under the lock (leases.ts); off unless configured. */
function leasesFor(core: MeterCore): Leases | undefined {
  const { deps, m, states } = core;
  if (!(deps.leases && deps.leases.calls > 0)) return undefined;
  return createLeases({
    store: deps.store, clock: deps.clock, options: deps.leases, log: deps.log,
    stateOf: (account) => states.take(account.agent_id, account.prev_stamp),
    keep: (agentId, state, account) => keep(core, agentId, state, account),
    figures: (trx, agentId, state, storedTier, account, pool, now, except) => figures(core, trx, agentId, state, storedTier, account, pool, now, undefined, except),
    load: (trx, agentId, state, pool, now) => loadState(m, trx, agentId, state, pool, now),
  });
}

/** The commons part of `_svc.usage` (read on every call: commons contributions are not metered). */
export async function commonsUsage(deps: Pick<MeteringDeps, 'commons' | 'commonsUrl'>, agentId: string) {
  const port = deps.commons?.();
  const s = port ? await port.stats(agentId).catch(() => undefined) : undefined;
  return { commons_url: deps.commonsUrl ?? null, commons_size: s?.size ?? null, commons_contributions: s?.contributions ?? null };
}

async function tierFor(core: MeterCore, agentId: string, opts?: ChargeOptions): Promise<string> {
  return opts?.tier ?? (await core.deps.agents.tierOf(agentId)) ?? 'free';
}

function assertMetered(action: MeteredAction): void {
  if (!(action in ACTION_POOL)) throw new Error(`unknown metered action ${action}`);
}

/** `Metering.charge`: from the agent's lease when one answers, else decided in the next batch. */
async function charge(core: MeterCore, batch: Batch, agentId: string, action: MeteredAction, opts?: ChargeOptions): Promise<Charge> {
  assertMetered(action);
  const tier = opts?.tier ?? (await tierFor(core, agentId));
  const leased = core.leases?.use(agentId, action, tier);
  if (leased) {
    Object.assign(leased.usage, await commonsUsage(core.deps, agentId));
    return leased;
  }
  const job: Job = { agentId, action, tier, chargeId: newOrderedId(), now: core.deps.clock.now() };
  // The commons figures are read while the charge waits for its batch.
  const commonsRead = commonsUsage(core.deps, agentId);
  let d: Decided;
  try {
    d = await batch.submit(job);
  } catch (e) {
    if (job.lease) core.leases!.discard(job.lease);
    throw e;
  }
  if (job.lease) core.leases!.activate(job.lease);
  return chargeOf(core, d, await commonsRead);
}

/** The charge a decision answers with: its receipt, and a refund that gives the call back once. */
function chargeOf(core: MeterCore, d: Decided, commons: Awaited<ReturnType<typeof commonsUsage>>): Charge {
  const { agentId } = d.charge;
  let refunded = false;
  const receipt: ChargeReceipt = {
    charge_id: d.charge.chargeId, agent_id: agentId, pool: d.charge.pool, day: d.day, free: d.charge.free,
    cost_units: d.charge.costUnits, spend_entries: d.spendEntries,
  };
  return {
    ...d.charge,
    usage: Object.assign(d.usage, commons),
    receipt,
    refund: async () => {
      if (refunded) return;
      refunded = true;
      await core.deps.store.withLocks([agentId], core.deps.clock.now(), (trx) => giveBack(core, trx, receipt));
    },
  };
}

/** `Metering.chargeWithin`: decided in the caller's transaction, on the account it holds. */
async function chargeWithin(core: MeterCore, trx: Transaction<Database>, agentId: string, action: MeteredAction,
  opts: Required<ChargeOptions>): Promise<ChargeWithin> {
  assertMetered(action);
  const job: Job = { agentId, action, tier: opts.tier, chargeId: newOrderedId(), now: core.deps.clock.now() };
  const { held, scoped } = await heldIn(core, trx, agentId, job.now);
  const { account } = held;
  const d = (await decide(core, trx, job, account, false, scoped ? held : undefined))!;
  const dip = mayDip(account, d) ? await markDip(core.deps.store, trx, job, account, d) : undefined;
  return {
    ...d.charge,
    async committed() {
      // The refill is asked for only once the dip it answers is on disk (a caller may answer at
      // COMMIT without waiting for the flush, as browse does).
      if (dip) core.deps.store.durable().then(() => core.deps.onLowBalance?.(dip), () => {});
      return { ...d.usage, ...(await commonsUsage(core.deps, agentId)) };
    },
  };
}

/**
 * The agent's account as `trx` holds it. In a scope (a memory write batch), the first charge of an
 * agent locks its account and later charges of the same transaction reuse that lock and that state;
 * the lot and counter updates of all of them are written once, when the scope ends. Alone, the
 * charge locks the account and writes its own rows.
 */
async function heldIn(core: MeterCore, trx: Transaction<Database>, agentId: string, now: number): Promise<{ held: Held; scoped: boolean }> {
  const scope = scopeOf(trx);
  let byAgent = scope?.get(core.heldSlot);
  if (scope && !byAgent) scope.set(core.heldSlot, (byAgent = new Map()));
  let held = byAgent?.get(agentId);
  if (!held) {
    // Spend rows per lot and action only inside a scope (a memory write batch); alone, the charge writes its own.
    held = holdAccount(await core.m.lock(trx, agentId, now), byAgent !== undefined);
    byAgent?.set(agentId, held);
  }
  return { held, scoped: byAgent !== undefined };
}

/** `Metering.check`: the charge's decision as a dry run, from memory when that can say yes. */
async function check(core: MeterCore, agentId: string, action: MeteredAction, opts?: ChargeOptions): Promise<void> {
  assertMetered(action);
  const tier = await tierFor(core, agentId, opts);
  const job: Job = { agentId, action, tier, chargeId: '', now: core.deps.clock.now() };
  if (passesInMemory(core, agentId, action, tier, job.now)) return;
  await core.deps.store.db.transaction().execute(async (trx) => {
    const row = await core.m.peek(trx, agentId);
    // No account yet: nothing used, nothing held; the decision below reads the same empty state.
    const account: LockedAccount = row
      ? { ...row, prev_stamp: row.meter_stamp }
      : { ...emptyAccount(agentId), prev_stamp: null };
    await decide(core, trx, job, account, true);
  });
}

/**
 * `check` from the agent's state in memory, without the database: true when that copy lets a call
 * of a credit tier's floor pool through (a free slot, or the price in live credit). Only a yes is
 * taken from it: a check is no reservation (the charge decides again under the lock), so a copy
 * that another instance's charges made stale costs at most a refusal at charge time, after the
 * work; a copy that says no may be behind a grant, so the database decides then. Monthly tiers and
 * parse (quotas by tier) always ask the database.
 */
function passesInMemory(core: MeterCore, agentId: string, action: MeteredAction, storedTier: string, now: number): boolean {
  const pool = ACTION_POOL[action];
  const floor = FREE_FLOORS[pool];
  if (floor === null || tierOf(storedTier).metering === 'monthly') return false;
  const state = core.states.peek(agentId);
  const queue = state?.pools.get(pool);
  if (!state?.lots || state.stamp === null || !queue) return false;
  return pickSlot(queue, floor, now, FLOOR_WINDOW_MS) !== undefined
    || summarize(state.lots, now).units - (state.holds ? heldUnits(state.holds, now) : 0) >= ACTION_PRICE[action];
}

/** Gives one call back under the account lock `trx` holds: its free slot or its credit, and its count. */
async function giveBack(core: MeterCore, trx: Transaction<Database>, r: ChargeReceipt): Promise<void> {
  if (r.free && r.pool !== 'parse') await releaseFreeSlot(trx, r.agent_id, r.pool, r.charge_id);
  if (r.cost_units > 0) await refundCharge(trx, r.agent_id, r.charge_id, r.spend_entries, core.deps.clock.now());
  await bumpDaily(trx, r.agent_id, r.pool, r.day, -1);
}

/** `Metering.usage`: `_svc.usage` from the database, after this instance's leases wrote the agent's calls. */
async function usage(core: MeterCore, agentId: string, opts?: ChargeOptions): Promise<UsageSnapshot> {
  await core.leases?.settle(agentId);
  const stored = await tierFor(core, agentId, opts);
  const now = core.deps.clock.now();
  const [part, commons] = await Promise.all([
    core.deps.store.db.transaction().execute(async (trx) => {
      const account = await trx.selectFrom('billing_accounts').select(['lifetime_purchase_units', 'auto_topup_enabled']).where('agent_id', '=', agentId).executeTakeFirst();
      const tier = effectiveTier(stored, Number(account?.lifetime_purchase_units ?? 0));
      const b = summarize(await core.m.lots(trx, agentId, now), now);
      return {
        credits_remaining_usd: formatUsd(b.units),
        credits_staked_usd: formatUsd(await core.m.staked(trx, agentId)),
        tier_label: tier.label,
        auto_topup: Number(account?.auto_topup_enabled ?? 0) === 1,
        credits_expire_at: b.earliestExpiry === null ? null : iso(b.earliestExpiry),
        browse_calls_remaining: await browseRemaining(core.m, trx, agentId, tier, now),
      };
    }),
    commonsUsage(core.deps, agentId),
  ]);
  return { ...part, ...commons };
}
