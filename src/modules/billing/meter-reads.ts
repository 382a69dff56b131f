/**
 * Filling an agent's in-memory metering state (meter-state.ts) from the database, inside the
 * transaction that holds the agent's account lock. Each part is read once per copy and then kept up
 * to date by the charges decided on it. A part already loaded is returned as it is, not as a
 * promise: a held charge of a loaded state (a metered memory write under load) then decides
 * without waiting on anything (no await, so no turn of the microtask queue).
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { TierDefinition } from '../../lib/tiers';
import { utcDay, utcMonthStartDay } from '../../lib/utc';
import { pendingCalls, type Held } from './held-account';
import type { HoldRow, MeterSql } from './meter-sql';
import { slotQueue, type MeterState, type SlotQueue } from './meter-state';
import { freeUsed } from './meter-store';
import { FLOOR_WINDOW_MS, FREE_FLOORS, monthlyBrowseLeft, type Pool } from './pricing';

type Trx = Transaction<Database>;

/** Calls of a pool in [from, to] (UTC days): the database's count and what `held` has not written yet. */
export async function countCalls(m: MeterSql, trx: Trx, agentId: string, pool: Pool, from: string, to: string, held?: Held): Promise<number> {
  return (await m.countDays(trx, agentId, pool, from, to)) + pendingCalls(held, pool, from, to);
}

/** A pool's free-slot queue, read once per state (a charge keeps it up to date afterwards). */
export function queueOf(m: MeterSql, trx: Trx, agentId: string, state: MeterState, p: Pool): SlotQueue | Promise<SlotQueue> {
  return state.pools.get(p) ?? m.slots(trx, agentId, p).then((rows) => {
    const q = slotQueue(rows);
    state.pools.set(p, q);
    return q;
  });
}

/** This month's calls of a pool up to `now`'s day: counted once per state and day, then kept by each charge. */
export function monthCalls(m: MeterSql, trx: Trx, agentId: string, state: MeterState, p: Pool, now: number, held?: Held): number | Promise<number> {
  const day = utcDay(now);
  const c = state.months.get(p);
  if (c?.day === day) return c.n;
  return countCalls(m, trx, agentId, p, utcMonthStartDay(now), day, held).then((n) => {
    state.months.set(p, { day, n });
    return n;
  });
}

/** The agent's credit holds (leases.ts), read into the state. */
export async function holdsOf(m: MeterSql, trx: Trx, agentId: string, state: MeterState): Promise<HoldRow[]> {
  return (state.holds = await m.holds(trx, agentId));
}

/** Loads what the state lacks of the live lots, the holds and the pool's free slots (what a lease decides on). */
export async function loadState(m: MeterSql, trx: Trx, agentId: string, state: MeterState, pool: Pool, now: number): Promise<void> {
  if (!state.lots) state.lots = await m.lots(trx, agentId, now);
  if (!state.holds) await holdsOf(m, trx, agentId, state);
  const q = queueOf(m, trx, agentId, state, pool);
  if (q instanceof Promise) await q;
}

/** Browse calls left, from the database (usage reads outside a charge). */
export async function browseRemaining(m: MeterSql, trx: Trx, agentId: string, tier: TierDefinition, now: number): Promise<number | null> {
  if (tier.metering === 'monthly') {
    return monthlyBrowseLeft(tier, tier.browsePerMonth === null ? 0 : await countCalls(m, trx, agentId, 'browse', utcMonthStartDay(now), utcDay(now)));
  }
  const floor = FREE_FLOORS.browse!;
  return floor - (await freeUsed(trx, agentId, 'browse', floor, now, FLOOR_WINDOW_MS));
}
