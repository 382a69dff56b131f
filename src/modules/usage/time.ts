/** UTC calendar helpers (days as YYYY-MM-DD text, which sorts like the dates). */
import { utcMonth } from '../../lib/utc';

export { utcDay as utcDayOf, utcMonth as utcMonthOf } from '../../lib/utc';

export const DAY_MS = 86_400_000;
export const utcMonthStartDay = (ms: number): string => `${utcMonth(ms)}-01`;

/** Units of 0.0001 USD as a 4-decimal USD string ("0.0200"). */
export function formatUnitsUsd(units: number): string {
  const sign = units < 0 ? '-' : '';
  const abs = Math.abs(Math.trunc(units));
  return `${sign}${Math.floor(abs / 10_000)}.${String(abs % 10_000).padStart(4, '0')}`;
}
