/**
 * Adapter: the usage module's MeterReadings (its port), read from billing's counters with the same
 * functions billing's own snapshot uses, so GET /v1/usage and GET /v1/billing never disagree.
 * Read-only. Billing's module hands it to the usage module (app.ts), as memory-meter.ts does for memory.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Clock } from '../../lib/clock';
import { effectiveTier } from '../../lib/tiers';
import type { MeterReadings, MeterTerms } from '../usage/ports';
import { stakeAccount } from './account';
import { balanceOf } from './ledger-store';
import { dailyRows, freeUsed } from './meter-store';
import { ACTION_PRICE, FLOOR_WINDOW_MS, FREE_FLOORS } from './pricing';

export function billingReadings(db: Kysely<Database>, clock: Clock, settle: (agentId: string) => Promise<void> = async () => {}): MeterReadings {
  return {
    async daily(agentId, fromDay, toDay) {
      await settle(agentId);
      const rows = await dailyRows(db, agentId, fromDay, toDay);
      return rows.map((r) => ({ pool: r.pool, day: r.day, count: Number(r.count) }));
    },
    async freeUsed(agentId, pool) {
      await settle(agentId);
      const floor = FREE_FLOORS[pool];
      return floor === null ? 0 : freeUsed(db, agentId, pool, floor, clock.now(), FLOOR_WINDOW_MS);
    },
    async effectiveTier(agentId, storedTier) {
      const row = await db.selectFrom('billing_accounts').select('lifetime_purchase_units').where('agent_id', '=', agentId).executeTakeFirst();
      return effectiveTier(storedTier, Number(row?.lifetime_purchase_units ?? 0));
    },
    async balanceUnits(agentId) {
      await settle(agentId);
      return (await balanceOf(db, agentId, clock.now())).units;
    },
    async stakedUnits(agentId) {
      await settle(agentId);
      return (await balanceOf(db, stakeAccount(agentId), clock.now())).units;
    },
    async searchCounts(agentId, fromDay, toDay) {
      await settle(agentId);
      const floor = FREE_FLOORS.search ?? 0;
      const since = clock.now() - FLOOR_WINDOW_MS;
      // Two indexed aggregates in one statement: one round trip on the hot path of every search.
      const row = await db.selectNoFrom((eb) => [
        eb.selectFrom('metering_daily').select(sql<number>`coalesce(sum(count), 0)`.as('n'))
          .where('agent_id', '=', agentId).where('pool', '=', 'search').where('day', '>=', fromDay).where('day', '<=', toDay)
          .as('calls'),
        eb.selectFrom('metering_free_slots').select(sql<number>`count(*)`.as('n'))
          .where('agent_id', '=', agentId).where('pool', '=', 'search').where('slot', '<', floor).where('used_at', '>', since)
          .as('free_used'),
      ]).executeTakeFirstOrThrow();
      return { calls: Number(row.calls ?? 0), freeUsed: Number(row.free_used ?? 0) };
    },
  };
}

export const billingTerms: MeterTerms = {
  freeFloor: { search: FREE_FLOORS.search, browse: FREE_FLOORS.browse, memory_write: FREE_FLOORS.memory_write, parse: FREE_FLOORS.parse },
  priceUnits: { search: ACTION_PRICE.search, browse: ACTION_PRICE.browse_static, memory_write: ACTION_PRICE.memory_write, parse: ACTION_PRICE.parse },
};
