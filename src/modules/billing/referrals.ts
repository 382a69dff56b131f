/**
 * Referral payouts (0.50 USD of credit to the referrer), decided by `settle()`, which runs on a timer
 * and through the admin route. Rules (docs/billing.md):
 * - the referred agent makes at least `minActions` metered calls (free or paid, any action) on the
 *   7 UTC days starting with its registration day; if it has not by then, rejected (inactive);
 * - the referrer is on a standard (credit-metered, non-legacy) tier, active, unfrozen, and at least
 *   7 UTC calendar days old (a younger referrer is retried later);
 * - self-referral and same-owner signups are rejected;
 * - at most 5 payouts per referrer per UTC day and 50 network-wide per UTC day (the rest wait a day).
 * Caps hold across instances: each decision runs under a global lock row and the referrer's lock.
 */
import type { Clock } from '../../lib/clock';
import type { Units } from '../../lib/money';
import { effectiveTier } from '../../lib/tiers';
import { addLot } from './ledger-store';
import { countDays } from './meter-store';
import type { createReferralStore } from './referral-store';
import type { BillingStore } from './store';
import { DAY_MS, utcDay } from '../../lib/utc';
import { utcDaysBetween } from './time';

export const REFERRAL_CREDIT_UNITS: Units = 5_000; // 0.50 USD
export const REFERRAL_WINDOW_DAYS = 7;
export const REFERRER_MIN_AGE_DAYS = 7;
export const PER_REFERRER_DAILY_CAP = 5;
export const NETWORK_DAILY_CAP = 50;
/** Pseudo-account whose row lock serialises payout decisions network-wide. */
const PAYOUT_LOCK = '~referral-payouts';

export interface ReferralDeps {
  store: BillingStore;
  referrals: ReturnType<typeof createReferralStore>;
  clock: Clock;
  enabled: boolean;
  minActions: number;
  creditExpiryDays: number;
}

export type Decision = 'paid' | 'rejected' | 'waiting';

export function createReferralPayouts(deps: ReferralDeps) {
  const { store, clock } = deps;

  async function activity(agentId: string, createdAt: number): Promise<number> {
    return countDays(store.db, agentId, null, utcDay(createdAt), utcDay(createdAt + (REFERRAL_WINDOW_DAYS - 1) * DAY_MS));
  }

  async function decideOne(p: { referred_agent_id: string; referrer_agent_id: string; referred_created_at: number; referred_owner: string }): Promise<{ decision: Decision; reason: string }> {
    const now = clock.now();
    const day = utcDay(now);
    const reject = (reason: string) => store.withLocks([PAYOUT_LOCK], now, async (trx) => {
      if (await deps.referrals.decided(trx, p.referred_agent_id)) return { decision: 'waiting' as Decision, reason: 'decided elsewhere' };
      await deps.referrals.decide(trx, { referred_agent_id: p.referred_agent_id, referrer_agent_id: p.referrer_agent_id, status: 'rejected', reason, amount_units: 0, day, decided_at: now });
      return { decision: 'rejected' as Decision, reason };
    });
    if (p.referrer_agent_id === p.referred_agent_id) return reject('self_referral');
    const referrer = await deps.referrals.agent(p.referrer_agent_id);
    if (!referrer) return reject('unknown_referrer');
    if (referrer.owner_identifier === p.referred_owner) return reject('same_owner');

    const acted = await activity(p.referred_agent_id, Number(p.referred_created_at));
    if (acted < deps.minActions) {
      // The window is the 7 UTC days starting with the registration day.
      return now >= (Math.floor(Number(p.referred_created_at) / DAY_MS) + REFERRAL_WINDOW_DAYS) * DAY_MS
        ? reject('inactive')
        : { decision: 'waiting', reason: `activity ${acted}/${deps.minActions}` };
    }
    const account = await store.getAccount(referrer.agent_id);
    if (effectiveTier(referrer.tier, account?.lifetime_purchase_units ?? 0).metering !== 'credits') return reject('referrer_not_standard_tier');
    if (referrer.status !== 'active') return reject('referrer_inactive');
    if (Number(referrer.frozen) === 1) return reject('referrer_frozen');
    if (utcDaysBetween(Number(referrer.created_at), now) < REFERRER_MIN_AGE_DAYS) return { decision: 'waiting', reason: 'referrer younger than 7 UTC days' };

    return store.withLocks([PAYOUT_LOCK, referrer.agent_id], now, async (trx) => {
      if (await deps.referrals.decided(trx, p.referred_agent_id)) return { decision: 'waiting' as Decision, reason: 'decided elsewhere' };
      if (await deps.referrals.paidOn(trx, day) >= NETWORK_DAILY_CAP) return { decision: 'waiting' as Decision, reason: 'network daily cap' };
      if (await deps.referrals.paidOn(trx, day, referrer.agent_id) >= PER_REFERRER_DAILY_CAP) return { decision: 'waiting' as Decision, reason: 'referrer daily cap' };
      await addLot(trx, {
        agentId: referrer.agent_id, kind: 'grant', units: REFERRAL_CREDIT_UNITS, ref: `referral:${p.referred_agent_id}`, now,
        expiresAt: deps.creditExpiryDays > 0 ? now + deps.creditExpiryDays * DAY_MS : null,
      });
      await deps.referrals.decide(trx, { referred_agent_id: p.referred_agent_id, referrer_agent_id: referrer.agent_id, status: 'paid', reason: null, amount_units: REFERRAL_CREDIT_UNITS, day, decided_at: now });
      return { decision: 'paid' as Decision, reason: 'activity rules met' };
    });
  }

  return {
    /** Decides every pending referral it can; returns counts. No-op when payouts are disabled. */
    async settle(limit = 500) {
      const counts = { paid: 0, rejected: 0, waiting: 0 };
      if (!deps.enabled) return { enabled: false, ...counts };
      for (const p of await deps.referrals.pending(limit)) counts[(await decideOne(p)).decision]++;
      return { enabled: true, ...counts };
    },
    status: (referredId: string) => deps.referrals.status(referredId),
  };
}

export type ReferralPayouts = ReturnType<typeof createReferralPayouts>;
