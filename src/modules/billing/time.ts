/** UTC calendar helpers for metering (days as YYYY-MM-DD text, which sorts like the dates). */
import { utcMonth } from '../../lib/utc';

export { utcDay } from '../../lib/utc';

export const DAY_MS = 86_400_000;

export const monthStartDay = (ms: number): string => `${utcMonth(ms)}-01`;

/** Whole UTC calendar days from a to b (b later). */
export const utcDaysBetween = (a: number, b: number): number => Math.floor(b / DAY_MS) - Math.floor(a / DAY_MS);
