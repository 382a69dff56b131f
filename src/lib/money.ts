/**
 * Money is an integer count of units of 0.0001 USD. Never a float: every price, balance and total
 * is a safe integer, so `credits_remaining_usd` prints exactly with four decimals and sums never
 * drift. One credit is 0.01 USD = 100 units; one cent is also 100 units.
 */
export type Units = number;

export const UNITS_PER_USD = 10_000;
export const UNITS_PER_CREDIT = 100;
export const UNITS_PER_CENT = 100;

export class MoneyError extends Error {
  readonly code = 'MONEY_INVALID';
}

function assertUnits(u: Units): void {
  if (!Number.isSafeInteger(u)) throw new MoneyError(`money must be a safe integer number of units, got ${u}`);
}

/** Whole credits to units. */
export function credits(n: number): Units {
  if (!Number.isSafeInteger(n)) throw new MoneyError(`credits must be an integer, got ${n}`);
  const u = n * UNITS_PER_CREDIT;
  assertUnits(u);
  return u;
}

/** Exactly four decimals: 12345 → "1.2345", -5 → "-0.0005". */
export function formatUsd(u: Units): string {
  assertUnits(u);
  const neg = u < 0;
  const abs = Math.abs(u);
  const whole = Math.floor(abs / UNITS_PER_USD);
  const frac = String(abs % UNITS_PER_USD).padStart(4, '0');
  return `${neg ? '-' : ''}${whole}.${frac}`;
}

/** Parses a decimal USD string with at most four decimals ("0.015" → 150). Exact, no floats. */
export function parseUsd(text: string): Units {
  const m = /^(-)?(\d+)(?:\.(\d{1,4}))?$/.exec(text.trim());
  if (!m) throw new MoneyError(`not a USD amount with at most 4 decimals: "${text}"`);
  const u = Number(m[2]) * UNITS_PER_USD + Number((m[3] ?? '').padEnd(4, '0'));
  assertUnits(u);
  return m[1] ? -u : u;
}

/** Units to whole cents, rounding half up (the payment processor charges whole cents). */
export function toCentsHalfUp(u: Units): number {
  assertUnits(u);
  if (u < 0) throw new MoneyError('cannot convert a negative amount to cents');
  return Math.floor((u + UNITS_PER_CENT / 2) / UNITS_PER_CENT);
}

export const centsToUnits = (cents: number): Units => {
  if (!Number.isSafeInteger(cents)) throw new MoneyError(`cents must be an integer, got ${cents}`);
  return cents * UNITS_PER_CENT;
};
