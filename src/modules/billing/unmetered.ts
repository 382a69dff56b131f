/**
 * Metering switched off (SVC_METERING_ENABLED=false, private self-hosting): every metered action is
 * free and uncounted, and billing writes nothing. Responses still carry `_svc.usage` (balance, tier,
 * browse calls left) and a search's counts, as billing's tables hold them.
 *
 * Nothing an agent does changes those figures here, so they are kept per agent in memory and read
 * again only when they could have changed:
 * - the account's meter stamp moved: every writer of an agent's billing rows (grant, purchase,
 *   refund, auto-top-up settings, a metered instance's charge) locks the account and rotates it;
 * - the agent's stored tier is another one;
 * - the UTC day changed (this month's counts; a monthly tier's browse quota);
 * - a credit lot expires, or a free call used earlier leaves the rolling window.
 * A call then costs one indexed read of the stamp instead of a read transaction per call.
 */
import type { Clock } from '../../lib/clock';
import { tierOf, type TierName } from '../../lib/tiers';
import { utcDay, utcMonthStartDay } from '../../lib/utc';
import type { MeterReadings } from '../usage/ports';
import { ACTION_POOL } from './pricing';
import type { AgentTierPort, Charge, Metering, PoolCounts, UsageSnapshot } from './metering-contract';

export interface UnmeteredDeps {
  /** The metering service, for its usage read (`usage`); nothing is charged through it. */
  counted: Pick<Metering, 'usage'>;
  readings: Pick<MeterReadings, 'effectiveTier' | 'searchCounts'>;
  agents: AgentTierPort;
  clock: Clock;
  /** The account's meter stamp ('' without an account): one read, no transaction. */
  stamp(agentId: string): Promise<string | null>;
  /** When the next free call inside the rolling window leaves it (null: none inside). */
  nextAgeOut(agentId: string, now: number): Promise<number | null>;
  /** The commons part of `_svc.usage` (read on every call: commons contributions are not metered). */
  commons(agentId: string): Promise<Pick<UsageSnapshot, 'commons_url' | 'commons_size' | 'commons_contributions'>>;
  /** Agents whose figures are kept (least recently used dropped first); default 10,000. */
  maxAgents?: number;
}

interface Kept {
  stamp: string | null;
  storedTier: string;
  day: string;
  /** The figures hold while `now` is before this (a lot's expiry, a free call ageing out). */
  until: number;
  tier: TierName;
  usage: UsageSnapshot;
  search: PoolCounts;
}

export function createUnmetered(deps: UnmeteredDeps): Metering {
  const { clock } = deps;
  const max = deps.maxAgents ?? 10_000;
  const kept = new Map<string, Kept>();

  async function load(agentId: string, storedTier: string, stamp: string | null, now: number): Promise<Kept> {
    const day = utcDay(now);
    // Read after the stamp: a write between the two leaves figures newer than the stamp kept with
    // them, which only costs one more read on the next call.
    const [usage, tier, counts, ageOut] = await Promise.all([
      deps.counted.usage(agentId, { tier: storedTier }),
      deps.readings.effectiveTier(agentId, storedTier),
      deps.readings.searchCounts(agentId, utcMonthStartDay(now), day),
      deps.nextAgeOut(agentId, now),
    ]);
    const expiry = usage.credits_expire_at === null ? Infinity : Date.parse(usage.credits_expire_at);
    const k: Kept = {
      stamp, storedTier, day, until: Math.min(expiry, ageOut ?? Infinity),
      tier: tier.name, usage, search: { callsThisMonth: counts.calls, freeUsedInWindow: counts.freeUsed },
    };
    kept.delete(agentId);
    if (kept.size >= max) kept.delete(kept.keys().next().value as string);
    kept.set(agentId, k);
    return k;
  }

  /** The agent's figures now: the kept copy when nothing could have changed them, else read again. */
  async function figures(agentId: string, storedTierGiven?: string): Promise<Kept & { commons: Awaited<ReturnType<UnmeteredDeps['commons']>> }> {
    const now = clock.now();
    const commonsRead = deps.commons(agentId);
    const [storedTier, stamp] = await Promise.all([
      storedTierGiven ?? deps.agents.tierOf(agentId).then((t) => t ?? 'free'),
      deps.stamp(agentId),
    ]);
    let k = kept.get(agentId);
    if (!k || k.stamp !== stamp || k.storedTier !== storedTier || k.day !== utcDay(now) || now >= k.until) {
      k = await load(agentId, storedTier, stamp, now);
    }
    return { ...k, commons: await commonsRead };
  }

  return {
    async charge(agentId, action, opts) {
      const f = await figures(agentId, opts?.tier);
      const pool = ACTION_POOL[action];
      const charge: Charge = {
        chargeId: 'unmetered', agentId, action, pool, free: true, costUnits: 0, tier: f.tier,
        usage: { ...f.usage, ...f.commons }, refund: async () => {},
      };
      if (pool === 'search') charge.poolCounts = { ...f.search };
      return charge;
    },
    check: async () => {},
    async chargeWithin(_trx, agentId, action, opts) {
      const pool = ACTION_POOL[action];
      // No read here: the caller's transaction holds SQLite's only connection. The kept tier when it
      // was worked out for this stored tier, else the stored tier's own.
      const k = kept.get(agentId);
      return {
        chargeId: 'unmetered', agentId, action, pool, free: true, costUnits: 0,
        tier: k?.storedTier === opts.tier ? k.tier : tierOf(opts.tier).name,
        committed: async () => {
          const f = await figures(agentId, opts.tier);
          return { ...f.usage, ...f.commons };
        },
      };
    },
    refund: async () => {},
    // Uncounted charges carry no receipt: nothing to give back.
    refundReceipt: async () => {},
    // Nothing is charged, so nothing is leased.
    settle: async () => {},
    close: async () => {},
    async usage(agentId, opts) {
      const f = await figures(agentId, opts?.tier);
      return { ...f.usage, ...f.commons };
    },
  };
}
