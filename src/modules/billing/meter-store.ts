/**
 * SQL of the metering counters outside the charge's hot path (meter-sql.ts): giving a free slot back,
 * free calls used, per-day call counts for the snapshot and usage history.
 */
import { sql } from 'kysely';
import type { Db } from './ledger-store';

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

/**
 * When the next free call of these pools still inside the window ending at `now` leaves it (its
 * `used_at` plus the window), or null when none is inside: until then `freeUsed` cannot go down.
 */
export async function nextFreeSlotAgeOut(db: Db, agentId: string, pools: string[], now: number, windowMs: number): Promise<number | null> {
  const row = await db.selectFrom('metering_free_slots').select((eb) => eb.fn.min('used_at').as('t'))
    .where('agent_id', '=', agentId).where('pool', 'in', pools).where('used_at', '>', now - windowMs)
    .executeTakeFirst();
  return row?.t === null || row?.t === undefined ? null : Number(row.t) + windowMs;
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
