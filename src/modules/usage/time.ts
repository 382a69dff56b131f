/** UTC calendar helpers (days as YYYY-MM-DD text, which sorts like the dates). */
export const DAY_MS = 86_400_000;
export const utcDayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
export const utcMonthOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7);
export const utcMonthStartDay = (ms: number): string => `${utcMonthOf(ms)}-01`;

/** Units of 0.0001 USD as a 4-decimal USD string ("0.0200"). */
export function formatUnitsUsd(units: number): string {
  const sign = units < 0 ? '-' : '';
  const abs = Math.abs(Math.trunc(units));
  return `${sign}${Math.floor(abs / 10_000)}.${String(abs % 10_000).padStart(4, '0')}`;
}
