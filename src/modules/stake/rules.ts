/**
 * The constants of stake, sponsorship and slashing, in one place for the service, the trust levels'
 * rule text and discovery. Money in units (1 credit = 100 units).
 */
import { credits, type Units } from '../../lib/money';
import { DAY_MS } from '../../lib/utc';

export const STAKE_TIERS = ['low', 'medium', 'high'] as const;
export type StakeTier = (typeof STAKE_TIERS)[number];

/** Credits a stake of each tier locks. */
export const STAKE_TIER_CREDITS: Record<StakeTier, number> = { low: 1_000, medium: 10_000, high: 50_000 };
export const stakeUnits = (tier: StakeTier): Units => credits(STAKE_TIER_CREDITS[tier]);
export const tierRank = (tier: string): number => STAKE_TIERS.indexOf(tier as StakeTier);

export const STAKE_LOCK_DAYS = 30;
export const UNSTAKE_COOLING_DAYS = 7;
export const SPONSOR_REVOKE_GRACE_DAYS = 7;
export const MAX_ACTIVE_WARDS = 5;
export const STAKE_LOCK_MS = STAKE_LOCK_DAYS * DAY_MS;
export const UNSTAKE_COOLING_MS = UNSTAKE_COOLING_DAYS * DAY_MS;
export const SPONSOR_REVOKE_GRACE_MS = SPONSOR_REVOKE_GRACE_DAYS * DAY_MS;

/** A ward's slash also takes this share of the amount from each of its sponsors' stakes (rounded down to the unit). */
export const SPONSOR_SLASH_SHARE = 0.25;
export const sponsorShare = (units: Units): Units => Math.floor(units / 4);

/** How a slash is paid out (billing's stake-ledger.ts `splitSlash`; the remainder of the division is burned). */
export const SLASH_SPLIT = { harmed: 0.7, insurance: 0.2, burn: 0.1 } as const;

/** Largest slash one request asks for, in credits. */
export const MAX_SLASH_CREDITS = 1_000_000;
