/**
 * Prices, free floors and the volume-discount slider: one definition used by metering, checkout,
 * the billing routes and the capabilities document (import CREDIT_SLIDER / PRICING_BLOCK).
 */
import { credits, formatUsd, toCentsHalfUp, type Units } from '../../lib/money';
import type { TierDefinition } from '../../lib/tiers';

export type MeteredAction = 'memory_write' | 'search' | 'browse_static' | 'browse_dynamic' | 'parse' | 'blob_search';
export type Pool = 'memory_write' | 'search' | 'browse' | 'parse';

export const METERED_ACTIONS: readonly MeteredAction[] = ['memory_write', 'search', 'browse_static', 'browse_dynamic', 'parse', 'blob_search'];

/** Blob search counts in the search pool; both browse modes share the browse pool. */
export const ACTION_POOL: Record<MeteredAction, Pool> = {
  memory_write: 'memory_write', search: 'search', blob_search: 'search',
  browse_static: 'browse', browse_dynamic: 'browse', parse: 'parse',
};

/** Free calls per rolling 30 days (credit-metered tiers). Parse has no floor: it has a monthly quota by tier. */
export const FREE_FLOORS: Record<Pool, number | null> = { memory_write: 1000, search: 50, browse: 20, parse: null };

export const FLOOR_WINDOW_MS = 30 * 86_400_000;

/** Price past the floor, in units (1 credit = 100 units). */
export const ACTION_PRICE: Record<MeteredAction, Units> = {
  memory_write: credits(1), search: credits(2), blob_search: credits(2),
  browse_static: credits(3), browse_dynamic: credits(5), parse: 0,
};

/**
 * Volume-discount slider: buy any whole number of credits between MIN and MAX; the rate of the band
 * the amount falls in applies to every credit (no marginal bands, so the total only ever grows with
 * the amount within a band; at a band edge buying more can cost less than the previous band's top, by design).
 */
export interface SliderBand { min_credits: number; max_credits: number | null; unit_rate_units: Units }
export const MIN_PURCHASE_CREDITS = 50; // 0.50 USD: the smallest card charge the processor accepts
export const MAX_PURCHASE_CREDITS = 1_000_000; // 10,000 USD per checkout
export const CREDIT_SLIDER: readonly SliderBand[] = [
  { min_credits: 50, max_credits: 999, unit_rate_units: 100 }, // 0.0100 USD per credit
  { min_credits: 1_000, max_credits: 4_999, unit_rate_units: 95 }, // 5% off
  { min_credits: 5_000, max_credits: 24_999, unit_rate_units: 90 }, // 10% off
  { min_credits: 25_000, max_credits: 99_999, unit_rate_units: 85 }, // 15% off
  { min_credits: 100_000, max_credits: null, unit_rate_units: 80 }, // 20% off
];

export interface Quote {
  credits: number;
  unit_rate_usd: string;
  /** Whole cents charged by the processor. */
  amount_cents: number;
  total_usd: string;
  /** Credit granted when paid (units). */
  grant_units: Units;
}

export function quoteCredits(n: number): Quote {
  if (!Number.isSafeInteger(n) || n < MIN_PURCHASE_CREDITS || n > MAX_PURCHASE_CREDITS) {
    throw new RangeError(`credits must be an integer from ${MIN_PURCHASE_CREDITS} to ${MAX_PURCHASE_CREDITS}`);
  }
  const band = CREDIT_SLIDER.find((b) => n >= b.min_credits && (b.max_credits === null || n <= b.max_credits))!;
  const cents = toCentsHalfUp(n * band.unit_rate_units);
  return { credits: n, unit_rate_usd: formatUsd(band.unit_rate_units), amount_cents: cents, total_usd: formatUsd(cents * 100), grant_units: credits(n) };
}

/** The `pricing` block of the capabilities document and of the 503 pricing preview. */
export const PRICING_BLOCK = {
  currency: 'usd',
  credit_usd: '0.0100',
  free_floors: { window: 'rolling_30_days', memory_write: 1000, search: 50, browse: 20 },
  price_credits: { memory_write: 1, search: 2, blob_search: 2, browse_static: 3, browse_dynamic: 5 },
  free_forever: ['identity', 'passport', 'memory_reads', 'reputation', 'commons_read', 'commons_write'],
  purchased_credit_expires: false,
  credit_slider: {
    min_credits: MIN_PURCHASE_CREDITS,
    max_credits: MAX_PURCHASE_CREDITS,
    rounding: 'total rounded half up to whole cents',
    bands: CREDIT_SLIDER.map((b) => ({ min_credits: b.min_credits, max_credits: b.max_credits, unit_rate_usd: formatUsd(b.unit_rate_units) })),
  },
} as const;

/** The refusal of each pool when a legacy monthly tier's quota is used up. */
export const limitCode: Record<Pool, { status: number; code: string; what: string }> = {
  search: { status: 429, code: 'SEARCH_CALLS_LIMIT', what: 'search' },
  browse: { status: 429, code: 'BROWSE_LIMIT', what: 'browse' },
  memory_write: { status: 429, code: 'MEMORY_OPS_LIMIT', what: 'memory write' },
  parse: { status: 429, code: 'PARSE_QUOTA_EXCEEDED', what: 'parse' },
};

/** Browse calls left this UTC month on a legacy monthly tier, `used` already made (null: no quota). */
export function monthlyBrowseLeft(t: TierDefinition, used: number): number | null {
  return t.browsePerMonth === null ? null : Math.max(0, t.browsePerMonth - used);
}

/** A legacy monthly tier's quota of a pool for the UTC month (null: none). */
export function monthlyQuota(t: TierDefinition, pool: Pool): number | null {
  switch (pool) {
    case 'search': return t.searchPerMonth;
    case 'browse': return t.browsePerMonth;
    case 'memory_write': return t.memoryWritesPerMonth;
    case 'parse': return t.parseOpsPerMonth;
  }
}
