/**
 * SQL of the metering counters: free-floor slots (rolling 30 days) and per-day call counts.
 * Every function takes the caller's transaction, which holds the agent's account lock.
 */
import { sql } from 'kysely';
import type { Db } from './ledger-store';

export interface ClaimedSlot { slot: number; prevUsedAt: number | null }

/**
 * Claims a free slot: a new one while fewer than `floor` exist, else the least recently used one if
 * its last use is at least `windowMs` old. Two indexed lookups, whatever the floor size.
 */
export async function claimFreeSlot(db: Db, a: { agentId: string; pool: string; floor: number; now: number; windowMs: number; chargeId: string }): Promise<ClaimedSlot | undefined> {
  const top = await db.selectFrom('metering_free_slots').select('slot')
    .where('agent_id', '=', a.agentId).where('pool', '=', a.pool).where('slot', '<', a.floor)
    .orderBy('slot', 'desc').limit(1).executeTakeFirst();
  const next = top ? Number(top.slot) + 1 : 0;
  if (next < a.floor) {
    await db.insertInto('metering_free_slots').values({ agent_id: a.agentId, pool: a.pool, slot: next, used_at: a.now, charge_id: a.chargeId }).execute();
    return { slot: next, prevUsedAt: null };
  }
  const oldest = await db.selectFrom('metering_free_slots').select(['slot', 'used_at'])
    .where('agent_id', '=', a.agentId).where('pool', '=', a.pool).where('slot', '<', a.floor)
    .orderBy('used_at').limit(1).executeTakeFirst();
  if (!oldest || Number(oldest.used_at) > a.now - a.windowMs) return undefined;
  await db.updateTable('metering_free_slots').set({ used_at: a.now, charge_id: a.chargeId })
    .where('agent_id', '=', a.agentId).where('pool', '=', a.pool).where('slot', '=', oldest.slot).execute();
  return { slot: Number(oldest.slot), prevUsedAt: Number(oldest.used_at) };
}

/** Gives a refunded free call back: the slot is usable again at once (its use never happened). */
export async function releaseFreeSlot(db: Db, agentId: string, pool: string, chargeId: string): Promise<boolean> {
  const r = await db.updateTable('metering_free_slots').set({ used_at: 0, charge_id: null })
    .where('agent_id', '=', agentId).where('pool', '=', pool).where('charge_id', '=', chargeId).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Free calls used in the window ending now. */
export async function freeUsed(db: Db, agentId: string, pool: string, floor: number, now: number, windowMs: number): Promise<number> {
  const row = await db.selectFrom('metering_free_slots').select(sql<number>`count(*)`.as('n'))
    .where('agent_id', '=', agentId).where('pool', '=', pool).where('slot', '<', floor).where('used_at', '>', now - windowMs)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function bumpDaily(db: Db, agentId: string, pool: string, day: string, delta: number): Promise<void> {
  await db.insertInto('metering_daily').values({ agent_id: agentId, pool, day, count: delta })
    .onConflict((oc) => oc.columns(['agent_id', 'pool', 'day']).doUpdateSet({ count: sql`metering_daily.count + ${delta}` }))
    .execute();
}

/** Calls in [fromDay, toDay] (inclusive UTC days, YYYY-MM-DD compares as text). */
export async function countDays(db: Db, agentId: string, pool: string | null, fromDay: string, toDay: string): Promise<number> {
  let q = db.selectFrom('metering_daily').select(sql<number>`coalesce(sum(count), 0)`.as('n'))
    .where('agent_id', '=', agentId).where('day', '>=', fromDay).where('day', '<=', toDay);
  if (pool) q = q.where('pool', '=', pool);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

export function dailyRows(db: Db, agentId: string, fromDay: string, toDay: string) {
  return db.selectFrom('metering_daily').select(['pool', 'day', 'count'])
    .where('agent_id', '=', agentId).where('day', '>=', fromDay).where('day', '<=', toDay).execute();
}

export async function lifetimeCount(db: Db, agentId: string, pool: string): Promise<number> {
  const row = await db.selectFrom('metering_daily').select(sql<number>`coalesce(sum(count), 0)`.as('n'))
    .where('agent_id', '=', agentId).where('pool', '=', pool).executeTakeFirstOrThrow();
  return Number(row.n);
}
