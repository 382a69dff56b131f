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
 * lock (see store.ts); charges are group-committed (batcher.ts) so the lock and commit are shared.
 */
import { ApiError } from '../../http/errors';
import { iso } from '../../lib/clock';
import { newOrderedId } from '../../lib/ids';
import { formatUsd, parseUsd, type Units } from '../../lib/money';
import { effectiveTier, tierOf, type TierDefinition } from '../../lib/tiers';
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { scopeOf, withScope, type ScopeSlot } from '../../infra/db/trx-scope';
import { createBatcher, type Outcome } from './batcher';
import { holdAccount, pendingCalls, type Held } from './held-account';
import { refundCharge } from './ledger-store';
import { heldUnits, summarize } from './meter-sql';
import { createLeases, type Figures, type Lease } from './leases';
import { createMeterStates, pickSlot, slotQueue, usedInWindow, useSlot, type MeterState, type SlotQueue } from './meter-state';
import { bumpDaily, freeUsed, releaseFreeSlot } from './meter-store';
import { ACTION_POOL, ACTION_PRICE, FLOOR_WINDOW_MS, FREE_FLOORS, limitCode, monthlyBrowseLeft, monthlyQuota, type MeteredAction, type Pool } from './pricing';
import { emptyAccount, type LockedAccount } from './store';
import { utcDay, utcMonthStartDay } from '../../lib/utc';
import type { Charge, ChargeOptions, ChargeReceipt, LowBalance, Metering, MeteringDeps, UsageSnapshot } from './metering-contract';

export type { MeteredAction } from './pricing';
export type {
  AgentTierPort, Charge, ChargeOptions, ChargeReceipt, ChargeWithin, CommonsStatsPort, LowBalance, Metering, MeteringDeps, PoolCounts, UsageSnapshot,
} from './metering-contract';

interface Job {
  agentId: string; action: MeteredAction; tier: string; chargeId: string; now: number;
  /** A lease the job's charge took a hold for (leases.ts): answers once the charge is on disk. */
  lease?: Lease;
}

interface Decided {
  charge: Omit<Charge, 'refund' | 'usage'>;
  usage: Figures['usage'];
  figures: Figures;
  day: string;
  /** The ledger rows of a paid charge (what a refund gives back). */
  spendEntries: string[];
}

/** The commons part of `_svc.usage` (read on every call: commons contributions are not metered). */
export async function commonsUsage(deps: Pick<MeteringDeps, 'commons' | 'commonsUrl'>, agentId: string) {
  const port = deps.commons?.();
  const s = port ? await port.stats(agentId).catch(() => undefined) : undefined;
  return { commons_url: deps.commonsUrl ?? null, commons_size: s?.size ?? null, commons_contributions: s?.contributions ?? null };
}

export function createMetering(deps: MeteringDeps): Metering {
  const { store, clock } = deps;
  const m = store.sql;
  const states = createMeterStates();

  /** Calls of a pool in [from, to] (UTC days): the database's count and what `held` has not written yet. */
  async function countCalls(trx: Transaction<Database>, agentId: string, pool: Pool, from: string, to: string, held?: Held): Promise<number> {
    return (await m.countDays(trx, agentId, pool, from, to)) + pendingCalls(held, pool, from, to);
  }

  /**
   * A pool's free-slot queue, read once per state (decide keeps it up to date afterwards). Loaded, it
   * is returned as is, not as a promise: a held charge of a loaded state (a metered memory write under
   * load) then decides without waiting on anything (no await, so no turn of the microtask queue).
   */
  function queueOf(trx: Transaction<Database>, agentId: string, state: MeterState, p: Pool): SlotQueue | Promise<SlotQueue> {
    return state.pools.get(p) ?? m.slots(trx, agentId, p).then((rows) => {
      const q = slotQueue(rows);
      state.pools.set(p, q);
      return q;
    });
  }

  /** This month's calls of a pool up to `day`: counted once per state and day, then kept by each charge (decide). */
  function monthCalls(trx: Transaction<Database>, agentId: string, state: MeterState, p: Pool, now: number, held?: Held): number | Promise<number> {
    const day = utcDay(now);
    const c = state.months.get(p);
    if (c?.day === day) return c.n;
    return countCalls(trx, agentId, p, utcMonthStartDay(now), day, held).then((n) => {
      state.months.set(p, { day, n });
      return n;
    });
  }

  /** The agent's credit holds (leases.ts), read into the state once per state. */
  async function holdsOf(trx: Transaction<Database>, agentId: string, state: MeterState) {
    return (state.holds = await m.holds(trx, agentId));
  }

  /** Browse calls left, from the database (usage reads outside a charge). */
  async function browseRemaining(trx: Transaction<Database>, agentId: string, tier: TierDefinition, now: number): Promise<number | null> {
    if (tier.metering === 'monthly') {
      return monthlyBrowseLeft(tier, tier.browsePerMonth === null ? 0 : await countCalls(trx, agentId, 'browse', utcMonthStartDay(now), utcDay(now)));
    }
    const floor = FREE_FLOORS.browse!;
    return floor - (await freeUsed(trx, agentId, 'browse', floor, now, FLOOR_WINDOW_MS));
  }

  /**
   * Decides one charge inside the transaction holding the agent's account lock (`account` as locked
   * by this transaction); an ApiError refuses only this job. Uses the agent's in-memory state when its
   * stamp is the one the lock found (meter-state.ts), else reads it; writes the charge's rows. With
   * `held` (the account held by the caller's transaction scope) it decides on the state the earlier
   * charges of that transaction left, and puts the lot and day-counter updates off to the scope's end.
   */
  async function decide(trx: Transaction<Database>, job: Job, account: LockedAccount, dryRun = false, held?: Held): Promise<Decided | undefined> {
    const { agentId, action, now, chargeId } = job;
    const tier = effectiveTier(job.tier, account.lifetime_purchase_units);
    const pool = ACTION_POOL[action];
    const day = utcDay(now);
    // The held state, not the bounded cache's copy: evicted mid-transaction, that copy would be
    // reloaded without this transaction's put-off draws.
    const state = held?.state ?? states.take(agentId, account.prev_stamp);
    if (held) held.state = state;
    // Each read below is awaited only when it is one: what the state holds is used as it is.
    const lots = state.lots ?? (state.lots = await m.lots(trx, agentId, now));
    let cost: Units = 0;
    let free = true;

    if (tier.metering === 'monthly' || pool === 'parse') {
      const quota = monthlyQuota(tier, pool);
      const used = quota === null ? 0 : await monthCalls(trx, agentId, state, pool, now, held);
      if (quota !== null && used >= quota) {
        const overage = pool === 'search' && tier.searchOverageUsdPerCall ? parseUsd(tier.searchOverageUsdPerCall) : 0;
        const l = limitCode[pool];
        const aside = overage === 0 ? 0 : heldUnits(state.holds ?? (await holdsOf(trx, agentId, state)), now);
        if (overage === 0 || summarize(lots, now).units - aside < overage) {
          keep(agentId, state, account);
          throw new ApiError(l.status, l.code, `Monthly ${l.what} quota of ${quota} for tier ${tier.name} is used up for this UTC month` +
            (overage ? '; the search overage is paid from credit and the balance is too low' : ''), { upgrade_url: deps.upgradeUrl, limit: quota });
        }
        cost = overage;
        free = false;
      }
    } else {
      const floor = FREE_FLOORS[pool]!;
      const loaded = queueOf(trx, agentId, state, pool);
      const q = loaded instanceof Promise ? await loaded : loaded;
      const pick = pickSlot(q, floor, now, FLOOR_WINDOW_MS);
      if (pick && dryRun) {
        // passes; nothing to write
      } else if (pick) {
        state.stamp = null; // changing: never reused unless this charge completes
        await (pick.reuse ? m.reuseSlot : m.newSlot)(trx, { agentId, pool, slot: pick.slot, now, chargeId });
        useSlot(q, pick, now);
      } else {
        cost = ACTION_PRICE[action];
        free = false;
        const units = summarize(lots, now).units;
        // Credit that live holds set aside (leases.ts) answers only their own instance's calls.
        let aside = heldUnits(state.holds ?? (await holdsOf(trx, agentId, state)), now);
        // What this instance's own leases hold unused pays the call rather than a refusal.
        const short = cost - (units - aside);
        if (short > 0 && leases) aside -= dryRun ? leases.spare(agentId) : await leases.yieldTo(trx, agentId, state, short);
        if (units - aside < cost) {
          keep(agentId, state, account);
          throw new ApiError(402, 'INSUFFICIENT_CREDITS',
            `The free floor of ${floor} ${pool} calls per rolling 30 days is used up and ${action} costs ${formatUsd(cost)} USD; the balance is ${formatUsd(units)} USD` +
            (aside > 0 ? `, of which ${formatUsd(aside)} USD is held for calls being answered by this or another svc instance (released within seconds)` : '') +
            '. Buy credits with POST /v1/billing/credits/checkout and pay on the billing page (upgrade_url).',
            { upgrade_url: deps.upgradeUrl, price_usd: formatUsd(cost), credits_remaining_usd: formatUsd(units) });
        }
      }
    }
    if (dryRun) {
      keep(agentId, state, account);
      return undefined;
    }
    state.stamp = null;
    let spendEntries: string[] = [];
    if (cost > 0) {
      const spent = m.spend(trx, lots, { agentId, units: cost, action, chargeId, now }, held?.defer);
      spendEntries = spent instanceof Promise ? await spent : spent;
    }
    if (held) {
      const k = `${pool} ${day}`;
      const b = held.bumps.get(k);
      if (b) b.n++;
      else held.bumps.set(k, { pool, day, n: 1 });
    } else {
      await m.bumpDaily(trx, agentId, pool, day, 1);
    }
    const counted = state.months.get(pool);
    if (counted?.day === day) counted.n++;
    else if (counted) state.months.delete(pool);
    const f = await figures(trx, agentId, state, job.tier, account, pool, now, held);
    keep(agentId, state, account);
    return {
      day,
      spendEntries,
      figures: f,
      charge: { chargeId, agentId, action, pool, free, costUnits: cost, tier: tier.name, poolCounts: f.poolCounts },
      usage: f.usage,
    };
  }

  /**
   * `_svc.usage` (less the commons part), the balance and the search pool's counts as `state` stands
   * under `account`'s lock, the charges of this transaction included.
   */
  async function figures(trx: Transaction<Database>, agentId: string, state: MeterState, storedTier: string, account: LockedAccount, pool: Pool,
    now: number, held?: Held, except?: Lease): Promise<Figures> {
    const tier = effectiveTier(storedTier, account.lifetime_purchase_units);
    const after = summarize(state.lots!, now);
    // Calls this instance's leases answered and have not written yet (leases.ts) are the agent's too.
    const unwritten = leases?.unwritten(agentId, pool, except);
    if (unwritten) after.units -= unwritten.units;
    let poolCounts: Figures['poolCounts'];
    if (pool === 'search') {
      const month = monthCalls(trx, agentId, state, pool, now, held);
      const callsThisMonth = month instanceof Promise ? await month : month;
      const loaded = queueOf(trx, agentId, state, pool);
      poolCounts = { callsThisMonth: callsThisMonth + (unwritten?.calls ?? 0), freeUsedInWindow: usedInWindow(loaded instanceof Promise ? await loaded : loaded, now, FLOOR_WINDOW_MS) };
    }
    let browse: number | null;
    if (tier.metering === 'monthly') {
      browse = monthlyBrowseLeft(tier, tier.browsePerMonth === null ? 0 : await monthCalls(trx, agentId, state, 'browse', now, held));
    } else {
      const loaded = queueOf(trx, agentId, state, 'browse');
      browse = FREE_FLOORS.browse! - usedInWindow(loaded instanceof Promise ? await loaded : loaded, now, FLOOR_WINDOW_MS);
    }
    const f: Figures = {
      balanceUnits: after.units,
      poolCounts,
      usage: {
        credits_remaining_usd: formatUsd(after.units),
        tier_label: tier.label,
        auto_topup: account.auto_topup_enabled === 1,
        credits_expire_at: after.earliestExpiry === null ? null : iso(after.earliestExpiry),
        browse_calls_remaining: browse,
      },
    };
    leases?.refresh(agentId, pool, f, except);
    return f;
  }

  /**
   * The state now matches what this transaction wrote (the account's new stamp). If the transaction
   * commits, the next charge finds that stamp and reuses the state; if it rolls back, the stamp reverts
   * and the state is reloaded. Later jobs of the same transaction expect the new stamp.
   */
  function keep(agentId: string, state: MeterState, account: LockedAccount): void {
    state.stamp = account.meter_stamp;
    account.prev_stamp = account.meter_stamp;
    states.put(agentId, state);
  }

  /** Whether `d` could open an auto-top-up dip at all (a paid charge, auto-top-up on, no dip open). */
  const mayDip = (account: LockedAccount, d: Decided) => d.charge.costUnits > 0 && account.auto_topup_enabled === 1 && account.topup_dip_open === 0;

  /**
   * After a charge under the lock: when it took the balance under the auto-top-up threshold, mark the
   * dip (exactly one charge of any instance triggers the refill). Returns the event to fire after commit.
   */
  async function markDip(trx: Transaction<Database>, job: Job, account: LockedAccount, d: Decided): Promise<LowBalance | undefined> {
    if (!mayDip(account, d)) return undefined;
    const units = parseUsd(d.usage.credits_remaining_usd);
    if (units >= account.auto_topup_threshold_units) return undefined;
    await store.updateAccount(trx, job.agentId, { topup_dip_open: 1 }, job.now);
    account.topup_dip_open = 1;
    return { agentId: job.agentId, account: { ...account }, balanceUnits: units, chargeId: job.chargeId };
  }

  /** Accounts held by a caller's transaction scope (trx-scope.ts), by agent. */
  const heldSlot: ScopeSlot<Map<string, Held>> = {
    async end(trx, held) {
      for (const h of held.values()) {
        for (const [lot, units] of h.takes) await m.takeLot(trx, lot, units);
        if (h.rows) for (const r of h.rows.values()) await m.spendRow(trx, { agentId: h.account.agent_id, ...r });
        for (const b of h.bumps.values()) await m.bumpDaily(trx, h.account.agent_id, b.pool, b.day, b.n);
      }
    },
    // Rolled back: the stamps would already send the next charge to the database; drop the copies anyway.
    discard(held) {
      for (const agentId of held.keys()) states.drop(agentId);
    },
  };

  const batcher = createBatcher<Job, Decided>(async (jobs) => {
    const low: LowBalance[] = [];
    // The batch is a transaction scope like a memory write batch: each agent's charges share its
    // locked account and state, and their lot draws and day counts are written once, at the end.
    const out = await store.withLocks(jobs.map((j) => j.agentId), clock.now(), (trx, accounts) => withScope(trx, async () => {
      const results: Outcome<Decided>[] = [];
      const held = new Map<string, Held>();
      scopeOf(trx)!.set(heldSlot, held);
      for (const job of jobs) {
        const account = accounts.get(job.agentId)!;
        let h = held.get(job.agentId);
        // Each charge of billing's own batch keeps its own spend rows: a refund gives them back.
        if (!h) held.set(job.agentId, (h = holdAccount(account, false)));
        try {
          const d = (await decide(trx, job, account, false, h))!;
          results.push({ ok: true, value: d });
          const dip = await markDip(trx, job, account, d);
          if (dip) low.push(dip);
          else if (leases && !d.charge.free) {
            job.lease = await leases.consider(trx, { agentId: job.agentId, action: job.action, storedTier: job.tier, now: job.now }, account, h.state!, d.charge, d.figures);
          }
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
          results.push({ ok: false, error: e });
        }
      }
      return results;
    }), { deferFlush: true });
    // The refill is asked for only once the dip it answers is on disk.
    if (low.length > 0) store.durable().then(() => { for (const l of low) deps.onLowBalance?.(l); }, () => {});
    return out;
  }, { durable: store.durable });

  const commonsPart = (agentId: string) => commonsUsage(deps, agentId);

  /** Paid calls decided in memory from credit held under the lock (leases.ts); off unless configured. */
  const leases = deps.leases && deps.leases.calls > 0 ? createLeases({
    store, clock, options: deps.leases, log: deps.log,
    stateOf: (account) => states.take(account.agent_id, account.prev_stamp),
    keep,
    figures: (trx, agentId, state, storedTier, account, pool, now, except) => figures(trx, agentId, state, storedTier, account, pool, now, undefined, except),
    async load(trx, agentId, state, pool, now) {
      if (!state.lots) state.lots = await m.lots(trx, agentId, now);
      if (!state.holds) await holdsOf(trx, agentId, state);
      const q = queueOf(trx, agentId, state, pool);
      if (q instanceof Promise) await q;
    },
  }) : undefined;

  /**
   * `check` from the agent's state in memory, without the database: true when that copy lets a call
   * of a credit tier's floor pool through (a free slot, or the price in live credit). Only a yes is
   * taken from it: a check is no reservation (the charge decides again under the lock), so a copy
   * that another instance's charges made stale costs at most a refusal at charge time, after the
   * work; a copy that says no may be behind a grant, so the database decides then. Monthly tiers and
   * parse (quotas by tier) always ask the database.
   */
  function passesInMemory(agentId: string, action: MeteredAction, storedTier: string, now: number): boolean {
    const pool = ACTION_POOL[action];
    const floor = FREE_FLOORS[pool];
    if (floor === null || tierOf(storedTier).metering === 'monthly') return false;
    const state = states.peek(agentId);
    const queue = state?.pools.get(pool);
    if (!state?.lots || state.stamp === null || !queue) return false;
    return pickSlot(queue, floor, now, FLOOR_WINDOW_MS) !== undefined
      || summarize(state.lots, now).units - (state.holds ? heldUnits(state.holds, now) : 0) >= ACTION_PRICE[action];
  }

  async function tierFor(agentId: string, opts?: ChargeOptions): Promise<string> {
    return opts?.tier ?? (await deps.agents.tierOf(agentId)) ?? 'free';
  }

  /** Gives one call back under the account lock `trx` holds: its free slot or its credit, and its count. */
  async function giveBack(trx: Transaction<Database>, r: ChargeReceipt) {
    if (r.free && r.pool !== 'parse') await releaseFreeSlot(trx, r.agent_id, r.pool, r.charge_id);
    if (r.cost_units > 0) await refundCharge(trx, r.agent_id, r.charge_id, r.spend_entries, clock.now());
    await bumpDaily(trx, r.agent_id, r.pool, r.day, -1);
  }

  const metering: Metering = {
    async charge(agentId, action, opts) {
      if (!(action in ACTION_POOL)) throw new Error(`unknown metered action ${action}`);
      const tier = opts?.tier ?? (await tierFor(agentId));
      const leased = leases?.use(agentId, action, tier);
      if (leased) {
        Object.assign(leased.usage, await commonsPart(agentId));
        return leased;
      }
      const job: Job = { agentId, action, tier, chargeId: newOrderedId(), now: clock.now() };
      // The commons figures are read while the charge waits for its batch.
      const commonsRead = commonsPart(agentId);
      let d: Decided;
      try {
        d = await batcher.submit(job);
      } catch (e) {
        if (job.lease) leases!.discard(job.lease);
        throw e;
      }
      if (job.lease) leases!.activate(job.lease);
      const commons = await commonsRead;
      let refunded = false;
      const receipt: ChargeReceipt = {
        charge_id: d.charge.chargeId, agent_id: agentId, pool: d.charge.pool, day: d.day, free: d.charge.free,
        cost_units: d.charge.costUnits, spend_entries: d.spendEntries,
      };
      const charge: Charge = {
        ...d.charge,
        usage: Object.assign(d.usage, commons),
        receipt,
        refund: async () => {
          if (refunded) return;
          refunded = true;
          await store.withLocks([agentId], clock.now(), (trx) => giveBack(trx, receipt));
        },
      };
      return charge;
    },
    async chargeWithin(trx, agentId, action, opts) {
      if (!(action in ACTION_POOL)) throw new Error(`unknown metered action ${action}`);
      const job: Job = { agentId, action, tier: opts.tier, chargeId: newOrderedId(), now: clock.now() };
      // In a scope (a memory write batch), the first charge of an agent locks its account and later
      // charges of the same transaction reuse that lock and that state; the lot and counter updates
      // of all of them are written once, when the scope ends.
      const scope = scopeOf(trx);
      let heldByAgent = scope?.get(heldSlot);
      if (scope && !heldByAgent) scope.set(heldSlot, (heldByAgent = new Map()));
      let held = heldByAgent?.get(agentId);
      if (!held) {
        // Spend rows per lot and action only inside a scope (a memory write batch); alone, the charge writes its own.
        held = holdAccount(await m.lock(trx, agentId, job.now), heldByAgent !== undefined);
        heldByAgent?.set(agentId, held);
      }
      const { account } = held;
      const d = (await decide(trx, job, account, false, heldByAgent ? held : undefined))!;
      const dip = mayDip(account, d) ? await markDip(trx, job, account, d) : undefined;
      return {
        ...d.charge,
        async committed() {
          // The refill is asked for only once the dip it answers is on disk (a caller may answer at
          // COMMIT without waiting for the flush, as browse does).
          if (dip) store.durable().then(() => deps.onLowBalance?.(dip), () => {});
          return { ...d.usage, ...(await commonsPart(agentId)) };
        },
      };
    },
    async check(agentId, action, opts) {
      if (!(action in ACTION_POOL)) throw new Error(`unknown metered action ${action}`);
      const tier = await tierFor(agentId, opts);
      const job: Job = { agentId, action, tier, chargeId: '', now: clock.now() };
      if (passesInMemory(agentId, action, tier, job.now)) return;
      await store.db.transaction().execute(async (trx) => {
        const row = await m.peek(trx, agentId);
        // No account yet: nothing used, nothing held; the decision below reads the same empty state.
        const account: LockedAccount = row
          ? { ...row, prev_stamp: row.meter_stamp }
          : { ...emptyAccount(agentId), prev_stamp: null };
        await decide(trx, job, account, true);
      });
    },
    refund: (charge) => charge.refund(),
    async refundReceipt(trx, receipt) {
      await m.lock(trx, receipt.agent_id, clock.now());
      await giveBack(trx, receipt);
    },
    async settle(agentId) {
      await leases?.settle(agentId);
    },
    async close() {
      await leases?.close();
    },
    async usage(agentId, opts) {
      await leases?.settle(agentId);
      const stored = await tierFor(agentId, opts);
      const now = clock.now();
      const [part, commons] = await Promise.all([
        store.db.transaction().execute(async (trx) => {
          const account = await trx.selectFrom('billing_accounts').select(['lifetime_purchase_units', 'auto_topup_enabled']).where('agent_id', '=', agentId).executeTakeFirst();
          const tier = effectiveTier(stored, Number(account?.lifetime_purchase_units ?? 0));
          const b = summarize(await m.lots(trx, agentId, now), now);
          return {
            credits_remaining_usd: formatUsd(b.units),
            tier_label: tier.label,
            auto_topup: Number(account?.auto_topup_enabled ?? 0) === 1,
            credits_expire_at: b.earliestExpiry === null ? null : iso(b.earliestExpiry),
            browse_calls_remaining: await browseRemaining(trx, agentId, tier, now),
          };
        }),
        commonsPart(agentId),
      ]);
      return { ...part, ...commons };
    },
  };
  return metering;
}
