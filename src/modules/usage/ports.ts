/**
 * What the usage module reads from billing (wired in app.ts). Billing owns every counter; this
 * module only presents them, so the numbers an agent sees are the ones billing decides on.
 */
import type { TierDefinition } from '../../lib/tiers';

export type MeteredPool = 'search' | 'browse' | 'memory_write' | 'parse';
export const METERED_POOLS: readonly MeteredPool[] = ['search', 'browse', 'memory_write', 'parse'];

export interface DailyCount { pool: string; day: string; count: number }

export interface MeterReadings {
  /** Metered calls per pool and UTC day for days in [fromDay, toDay] (YYYY-MM-DD, inclusive). */
  daily(agentId: string, fromDay: string, toDay: string): Promise<DailyCount[]>;
  /** Free-floor calls of a pool used in the rolling 30 days ending now (credit-metered tiers). */
  freeUsed(agentId: string, pool: MeteredPool): Promise<number>;
  /** The tier the agent is billed on (lifetime purchases can raise the stored tier). */
  effectiveTier(agentId: string, storedTier: string): Promise<TierDefinition>;
  /** Credit balance in units of 0.0001 USD. */
  balanceUnits(agentId: string): Promise<number>;
  /** Credit at stake (locked or cooling), never part of the balance; units. */
  stakedUnits?(agentId: string): Promise<number>;
  /**
   * One read for the search `usage` object (it runs on every search): search-pool calls in
   * [fromDay, toDay] and free-floor search calls used in the rolling window ending now.
   */
  searchCounts(agentId: string, fromDay: string, toDay: string): Promise<{ calls: number; freeUsed: number }>;
}

/** Billing's free floors (calls per rolling 30 days) and prices past them (units), per pool. */
export interface MeterTerms {
  freeFloor: Record<MeteredPool, number | null>;
  /** Price of one call past the floor; browse: the static price (dynamic costs more). */
  priceUnits: Record<MeteredPool, number>;
}
