/**
 * Credit at stake, moved only through the credit ledger. The stake module decides (tiers, locks,
 * cooling, slashes); this file moves the money, inside the stake module's transaction, which holds
 * the account locks of every agent whose credit moves (`withAccounts`: the same lock as a charge,
 * so each such agent's in-memory metering copy is reloaded afterwards).
 *
 * The ledger's accounts: an agent's spendable lots (its agent id), the credit it has at stake (its
 * stake account, `stake:<agent id>`: one lot per stake, never spendable), the insurance pool and
 * burned credit. Every movement writes rows whose amounts sum to zero across accounts, so the sum
 * over all accounts changes only by purchases, grants, paid calls and their refunds.
 *
 * A stake is made of credit that never expires (purchases, and grants without an expiry): it comes
 * back after 37 days at the least, and expiring credit would either outlive its term in the stake
 * or be lost in it. It is drawn only from credit no live hold sets aside (leases.ts).
 */
import type { Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import { newOrderedId } from '../../lib/ids';
import { formatUsd, type Units } from '../../lib/money';
import { BURNED_ACCOUNT, INSURANCE_ACCOUNT, stakeAccount, type LockedAccount } from './account';
import { balanceOf, type Db } from './ledger-store';
import { heldUnits, summarize } from './meter-sql';
import type { BillingStore } from './store';

type Trx = Transaction<Database>;

/** What a slash took from one stake and where it went (units). */
export interface SlashSplit { taken: Units; harmed: Units; insurance: Units; burned: Units }

/** Shares of a slash, in tenths: 7 to the harmed agent, 2 to the insurance pool, the rest burned. */
const HARMED_TENTHS = 7;
const INSURANCE_TENTHS = 2;

/**
 * The split of `units` taken by a slash, exact in units: the harmed agent's and the pool's shares
 * round down, and the remainder of both divisions is burned (so the three always add up to `units`).
 */
export function splitSlash(units: Units): SlashSplit {
  const harmed = Math.floor((units * HARMED_TENTHS) / 10);
  const insurance = Math.floor((units * INSURANCE_TENTHS) / 10);
  return { taken: units, harmed, insurance, burned: units - harmed - insurance };
}

interface Row { agentId: string; kind: 'stake' | 'unstake' | 'slash'; units: Units; lotId: string; ref: string | null; now: number }

export function createStakeLedger(deps: { store: BillingStore; upgradeUrl: string }) {
  const { store } = deps;
  const m = store.sql;

  async function row(trx: Db, r: Row): Promise<void> {
    await trx.insertInto('credit_ledger').values({
      entry_id: newOrderedId(), agent_id: r.agentId, kind: r.kind, amount_units: r.units, lot_id: r.lotId,
      expires_at: null, action: r.kind, charge_id: null, ref: r.ref, created_at: r.now,
    }).execute();
  }

  /** A new never-expiring lot of `units` for `account`, opened by its ledger row. */
  async function openLot(trx: Db, account: string, kind: Row['kind'], units: Units, ref: string, now: number, lotId = newOrderedId()): Promise<void> {
    await trx.insertInto('credit_ledger').values({
      entry_id: lotId, agent_id: account, kind, amount_units: units, lot_id: lotId, expires_at: null, action: kind, charge_id: null, ref, created_at: now,
    }).execute();
    await trx.insertInto('credit_lots').values({ lot_id: lotId, agent_id: account, kind, expires_at: null, remaining_units: units, created_at: now }).execute();
  }

  /** Credit still in the stake's lot. */
  async function remaining(db: Db, stakeId: string): Promise<Units> {
    const r = await db.selectFrom('credit_lots').select('remaining_units').where('lot_id', '=', stakeId).executeTakeFirst();
    return r ? Number(r.remaining_units) : 0;
  }

  const addToLot = (trx: Db, lotId: string, units: Units) =>
    trx.updateTable('credit_lots').set((eb) => ({ remaining_units: eb('remaining_units', '+', units) })).where('lot_id', '=', lotId).execute();

  return {
    /**
     * Runs `fn` in one transaction holding these agents' account locks (agent-id order, as charges
     * take them), each with a fresh meter stamp.
     */
    withAccounts<T>(agentIds: string[], now: number, fn: (trx: Trx, accounts: Map<string, LockedAccount>) => Promise<T>): Promise<T> {
      return store.withLocks(agentIds, now, fn);
    },

    /**
     * Moves `units` of the agent's never-expiring, unheld credit into its stake `stakeId` (opening
     * the stake's lot, or adding to it). 402 INSUFFICIENT_CREDITS when short. The caller holds the
     * agent's lock.
     */
    async lock(trx: Trx, s: { agentId: string; stakeId: string; units: Units; now: number }): Promise<void> {
      const lots = await m.lots(trx, s.agentId, s.now);
      const unheld = summarize(lots, s.now).units - heldUnits(await m.holds(trx, s.agentId), s.now);
      const lasting = lots.filter((l) => l.expires_at === null);
      const stakeable = Math.min(unheld, lasting.reduce((n, l) => n + l.remaining_units, 0));
      if (stakeable < s.units) {
        throw new ApiError(402, 'INSUFFICIENT_CREDITS',
          `This stake needs ${formatUsd(s.units)} USD of credit that never expires and is not held for calls in flight; ${formatUsd(stakeable)} USD is. ` +
          'Granted credit with an expiry cannot be staked. Buy credits with POST /v1/billing/credits/checkout and pay on the billing page (upgrade_url).',
          { upgrade_url: deps.upgradeUrl, required_usd: formatUsd(s.units), stakeable_usd: formatUsd(stakeable) });
      }
      let left = s.units;
      for (const lot of lasting) {
        if (left === 0) break;
        const take = Math.min(left, lot.remaining_units);
        if (take <= 0) continue;
        await m.takeLot(trx, lot.lot_id, take);
        await row(trx, { agentId: s.agentId, kind: 'stake', units: -take, lotId: lot.lot_id, ref: null, now: s.now });
        left -= take;
      }
      const existing = await trx.selectFrom('credit_lots').select('lot_id').where('lot_id', '=', s.stakeId).executeTakeFirst();
      if (existing) {
        await row(trx, { agentId: stakeAccount(s.agentId), kind: 'stake', units: s.units, lotId: s.stakeId, ref: null, now: s.now });
        await addToLot(trx, s.stakeId, s.units);
      } else {
        await openLot(trx, stakeAccount(s.agentId), 'stake', s.units, `stake:${s.stakeId}`, s.now, s.stakeId);
      }
    },

    /** Credit still in the stake's lot. */
    remaining,

    /**
     * Returns what is left of the stake to the agent's spendable credit, as a new never-expiring lot:
     * at most once (the return's ledger `ref` is unique; a second call returns 0 and writes nothing).
     */
    async release(trx: Trx, s: { agentId: string; stakeId: string; now: number }): Promise<Units> {
      const ref = `unstake:${s.stakeId}`;
      if (await trx.selectFrom('credit_ledger').select('entry_id').where('ref', '=', ref).executeTakeFirst()) return 0;
      const units = await remaining(trx, s.stakeId);
      if (units > 0) {
        await row(trx, { agentId: stakeAccount(s.agentId), kind: 'unstake', units: -units, lotId: s.stakeId, ref: null, now: s.now });
        await addToLot(trx, s.stakeId, -units);
      }
      await openLot(trx, s.agentId, 'unstake', units, ref, s.now);
      return units;
    },

    /**
     * Takes up to `units` from the stake (what is there, if less) and pays it out: 0.7 to the harmed
     * agent as never-expiring credit, 0.2 to the insurance pool, the rest burned (`splitSlash`).
     * The caller holds the locks of the stake's owner and of the harmed agent.
     */
    async slash(trx: Trx, s: { slashId: string; agentId: string; stakeId: string; units: Units; harmedAgentId: string; now: number }): Promise<SlashSplit> {
      const split = splitSlash(Math.min(s.units, await remaining(trx, s.stakeId)));
      if (split.taken === 0) return split;
      const ref = `slash:${s.slashId}:${s.stakeId}`;
      await row(trx, { agentId: stakeAccount(s.agentId), kind: 'slash', units: -split.taken, lotId: s.stakeId, ref, now: s.now });
      await addToLot(trx, s.stakeId, -split.taken);
      if (split.harmed > 0) await openLot(trx, s.harmedAgentId, 'slash', split.harmed, `${ref}:harmed`, s.now);
      if (split.insurance > 0) await openLot(trx, INSURANCE_ACCOUNT, 'slash', split.insurance, `${ref}:insurance`, s.now);
      if (split.burned > 0) await openLot(trx, BURNED_ACCOUNT, 'slash', split.burned, `${ref}:burned`, s.now);
      return split;
    },

    /** Credit the agent has at stake (every stake of its stake account). */
    async staked(db: Db, agentId: string, now: number): Promise<Units> {
      return (await balanceOf(db, stakeAccount(agentId), now)).units;
    },

    /** The insurance pool's and burned credit's totals. */
    async pools(db: Db, now: number): Promise<{ insurance: Units; burned: Units }> {
      const [insurance, burned] = await Promise.all([balanceOf(db, INSURANCE_ACCOUNT, now), balanceOf(db, BURNED_ACCOUNT, now)]);
      return { insurance: insurance.units, burned: burned.units };
    },
  };
}

export type StakeLedger = ReturnType<typeof createStakeLedger>;
